// Shared by the sink tests: a fresh folder per test and batches with every type.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/batch.h"
#include "clients/duckdb/duckdb_client.h"

namespace skippr::testing {

// A new empty folder under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Known values, with a NULL in every column of the last row:
//   b bool, i int64, d double, s string, bin binary, ts timestamp, day date, j json.
Batch every_type_batch();

// `rows` rows of (id int64 = first_id.., x double = id / 2, name string = "name-<id>").
Batch simple_batch(size_t rows, int64_t first_id = 0);

// Reads a DuckDB file through its own database handle; call it only while no sink has the file open.
QueryRows read_db(const std::filesystem::path& path, const std::string& sql);
// The single value of a one-row, one-column query ("NULL" for null, "<no single value>" otherwise).
std::string scalar(const std::filesystem::path& path, const std::string& sql);

}  // namespace skippr::testing
