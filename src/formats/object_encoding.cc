#include "formats/object_encoding.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "core/env.h"

namespace skippr {

std::string ObjectEncoding::extension() const {
  static constexpr const char* kExtensions[] = {".jsonl", ".csv", ".parquet"};
  return std::string(kExtensions[static_cast<int>(format)]) + extension_of(compression);
}

const char* ObjectEncoding::content_type() const {
  switch (format) {
    case OutputFormat::kJsonl:
      return compression == Compression::kNone ? "application/x-ndjson" : "application/octet-stream";
    case OutputFormat::kCsv:
      return compression == Compression::kNone ? "text/csv" : "application/octet-stream";
    case OutputFormat::kParquet:
      return "application/vnd.apache.parquet";
  }
  return "application/octet-stream";
}

std::string batch_object_name(const BatchId& id, const ObjectEncoding& encoding) {
  const std::string lineage = id.lineage.empty() ? std::string() : id.lineage + "-";
  return fmt::format("{}-{:06}-{}{:020}{}", id.pipeline, id.epoch, lineage, id.seq, encoding.extension());
}

std::vector<ParamSpec> object_encoding_params() {
  return {
      {"format", ParamType::kString, false, "parquet", "parquet, jsonl or csv"},
      {"compression", ParamType::kString, false, "auto",
       "auto (zstd inside Parquet, none for jsonl/csv), none, gzip or zstd"},
  };
}

Result<ObjectEncoding> read_object_encoding(const nlohmann::json& params, std::string_view where) {
  ObjectEncoding e;
  const std::string format = params.value("format", std::string("parquet"));
  if (format == "parquet") {
    e.format = OutputFormat::kParquet;
  } else if (format == "jsonl") {
    e.format = OutputFormat::kJsonl;
  } else if (format == "csv") {
    e.format = OutputFormat::kCsv;
  } else {
    return fail(ErrorKind::kConfig, fmt::format("{}: format '{}' is not parquet, jsonl or csv", where, format));
  }
  const std::string compression = params.value("compression", std::string("auto"));
  if (compression == "auto") return e;
  auto c = compression_from_string(compression);
  if (!c) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: compression '{}' is not auto, none, gzip or zstd", where, compression));
  }
  if (e.format == OutputFormat::kParquet) {
    e.parquet_compression = *c == Compression::kNone ? "uncompressed" : to_string(*c);
  } else {
    e.compression = *c;
  }
  return e;
}

Result<std::string> ObjectEncoder::encode(const Batch& batch) {
  if (encoding_.format != OutputFormat::kParquet) {
    std::string text = encoding_.format == OutputFormat::kJsonl ? encode_jsonl(batch) : encode_csv(batch);
    if (encoding_.compression == Compression::kNone) return text;
    return compress_buffer(text, encoding_.compression);
  }
  const std::filesystem::path scratch = scratch_dir_ / "object.parquet.tmp";
  SKIPPR_TRY(encode_to_file(batch, scratch));
  std::ifstream in(scratch, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool read_back = !in.bad();
  in.close();
  std::error_code ignored;
  std::filesystem::remove(scratch, ignored);
  if (!read_back) {
    return fail(ErrorKind::kUnavailable, fmt::format("cannot read back the Parquet file {}", scratch.string()));
  }
  return bytes;
}

Status ObjectEncoder::encode_to_file(const Batch& batch, const std::filesystem::path& path) {
  if (encoding_.format != OutputFormat::kParquet) {
    auto bytes = encode(batch);
    if (!bytes) return std::unexpected(bytes.error());
    auto file = shared_files_env().open_writable(path, OpenMode::kCreateOrTruncate);
    if (!file) return std::unexpected(file.error());
    SKIPPR_TRY((*file)->append(*bytes));
    return (*file)->close();
  }
  if (!parquet_) {
    auto writer = ParquetFileWriter::open();
    if (!writer) return std::unexpected(writer.error());
    parquet_.emplace(std::move(*writer));
  }
  return parquet_->write(batch, path, encoding_.parquet_compression);
}

}  // namespace skippr
