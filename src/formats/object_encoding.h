// How a sink that writes one file or object per batch (File, S3, and the other object stores) turns a batch into
// bytes: the `format` and `compression` parameters they share, parsed once, and the encoder for them.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/connector.h"
#include "core/result.h"
#include "formats/batch_encoders.h"
#include "formats/compression.h"

namespace skippr {

enum class OutputFormat { kJsonl, kCsv, kParquet };

struct ObjectEncoding {
  OutputFormat format = OutputFormat::kParquet;
  Compression compression = Compression::kNone;  // jsonl and csv: the whole object
  std::string parquet_compression = "zstd";      // parquet: its column chunks
  // ".parquet", ".jsonl.gz", ...
  std::string extension() const;
  const char* content_type() const;
};

// The name of a batch's file or object: <pipeline>-<epoch>-<lineage>-<seq><extension>. The lineage keeps a new
// DATA_DIR (or a RESET) from meeting the names of an earlier one; a batch committed before lineages existed keeps the
// name it had.
std::string batch_object_name(const BatchId& id, const ObjectEncoding& encoding);

// The `format` and `compression` parameters, as every such sink declares them.
std::vector<ParamSpec> object_encoding_params();
// kConfig naming `where` for a value that is not one of them.
Result<ObjectEncoding> read_object_encoding(const nlohmann::json& params, std::string_view where);

// Encodes batches as `encoding` says; Parquet goes through an in-memory DuckDB and a scratch file in `scratch_dir`.
// Not thread-safe.
class ObjectEncoder {
 public:
  ObjectEncoder(ObjectEncoding encoding, std::filesystem::path scratch_dir)
      : encoding_(std::move(encoding)), scratch_dir_(std::move(scratch_dir)) {}
  const ObjectEncoding& encoding() const { return encoding_; }
  // The whole object's bytes.
  Result<std::string> encode(const Batch& batch);
  // Writes the object to `path` (not synced: the caller makes it durable and visible).
  Status encode_to_file(const Batch& batch, const std::filesystem::path& path);

 private:
  ObjectEncoding encoding_;
  std::filesystem::path scratch_dir_;
  std::optional<ParquetFileWriter> parquet_;
};

}  // namespace skippr
