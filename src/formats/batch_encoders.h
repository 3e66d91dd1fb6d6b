// A batch as the bytes of one output file: JSON lines (formats/json_rows), CSV, or Parquet written by DuckDB's
// COPY (no Parquet code of our own).
#pragma once

#include <duckdb.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clients/duckdb/duckdb_client.h"
#include "core/batch.h"

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
  // What a table format asks of its files beyond the columns (Iceberg: each column's field id, its schema in the
  // footer's key-value metadata, JSON as plain strings).
  struct Options {
    std::string compression = "zstd";  // uncompressed, snappy, gzip or zstd
    std::vector<int> field_ids;        // one per batch column, or empty
    std::vector<std::pair<std::string, std::string>> key_value_metadata;
    bool json_as_text = false;  // JSON columns as plain UTF-8 strings rather than Parquet's JSON type
  };
  // Writes `batch` to `path`. Not fsynced: the caller does it.
  Status write(const Batch& batch, const std::filesystem::path& path, const std::string& compression) {
    Options options;
    options.compression = compression;
    return write(batch, path, options);
  }
  Status write(const Batch& batch, const std::filesystem::path& path, const Options& options);

 private:
  ParquetFileWriter(DuckDbDatabase db, DuckDbConnection conn) : db_(std::move(db)), conn_(std::move(conn)) {}
  DuckDbDatabase db_;
  DuckDbConnection conn_;
};

}  // namespace skippr
