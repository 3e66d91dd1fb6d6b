// Parquet -> rows through DuckDB's read_parquet (no Parquet code of our own), streamed chunk by chunk. Columns are
// cast to the batch's types in SQL: integers -> int64, floats/decimals -> double, text, blob, date, timestamps,
// and anything nested (struct, list, map) -> JSON text. The position is the file's row number.
#pragma once

#include <filesystem>
#include <memory>

#include "formats/jsonl_reader.h"
#include "formats/row_builder.h"

namespace skippr {

class ParquetReader {
 public:
  // Reads `path` starting at row `first_row` (0-based).
  static Result<std::unique_ptr<ParquetReader>> open(const std::filesystem::path& path, uint64_t first_row);
  ~ParquetReader();

  // Reads rows until `progress` reaches a limit (false) or the file ends (true).
  Result<bool> read(RowBuilder& rows, const ReadLimits& limits, ReadProgress& progress);
  uint64_t next_row() const { return next_row_; }

 private:
  struct Impl;
  explicit ParquetReader(std::unique_ptr<Impl> impl, uint64_t first_row);
  std::unique_ptr<Impl> impl_;
  uint64_t next_row_ = 0;
};

}  // namespace skippr
