// A batch as the bytes of one output file: JSON lines (formats/json_rows), CSV, or Parquet written by DuckDB's
// COPY (no Parquet code of our own).
#pragma once

#include <duckdb.h>

#include <filesystem>
#include <optional>
#include <string>

#include "core/batch.h"
#include "clients/duckdb/duckdb_client.h"

namespace skippr {

std::string encode_jsonl(const Batch& batch);
// A header line with the field names, then one record per row: NULL is an empty unquoted field, an empty string is
// "" (so the two stay apart), fields with the delimiter, a quote or a newline are quoted.
std::string encode_csv(const Batch& batch);

// Writes Parquet files through an in-memory DuckDB: the batch goes through an appender into a temporary table,
// then COPY ... TO (FORMAT parquet). Not thread-safe.
class ParquetFileWriter {
 public:
  static Result<ParquetFileWriter> open();
  // Writes `batch` to `path` (compression: uncompressed, snappy, gzip or zstd). Not fsynced: the caller does it.
  Status write(const Batch& batch, const std::filesystem::path& path, const std::string& compression);

 private:
  ParquetFileWriter(DuckDbDatabase db, DuckDbConnection conn) : db_(std::move(db)), conn_(std::move(conn)) {}
  DuckDbDatabase db_;
  DuckDbConnection conn_;
};

}  // namespace skippr
