// Test support: what an independent Iceberg reader (icebird, on Node; tests/support/iceberg_read.mjs) sees in a
// table, and the table's current metadata as a reader finds it.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace skippr::test {

struct IcebergDigest {
  uint64_t rows = 0;
  uint64_t distinct_keys = 0;
  std::string hash;  // order-independent, over every column of every row
  std::vector<std::string> columns;
  int snapshots = 0;
  std::string error;  // icebird's complaint when it could not read the table
};

// `tables`: file:///... or s3://bucket/prefix/table URLs, read together; s3:// objects are read from
// `s3_mirror`/<bucket>/<key> (the test downloads them there first).
IcebergDigest icebird_digest(const std::vector<std::string>& tables, const std::string& key_column,
                             const std::filesystem::path& s3_mirror = {});

// The current vN.metadata.json of a table in a folder: the highest N (a reader that trusts no hint).
nlohmann::json iceberg_current_metadata(const std::filesystem::path& table);
// N of the newest metadata/vN.metadata.json of `table`.
int iceberg_newest_version(const std::filesystem::path& table);

// Every BatchId in the skippr.batch-ids of the metadata's snapshots, with repeats.
std::vector<std::string> iceberg_snapshot_batch_ids(const nlohmann::json& metadata);

}  // namespace skippr::test
