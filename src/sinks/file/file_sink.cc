#include "sinks/file/file_sink.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "core/env.h"
#include "formats/compression.h"
#include "sinks/file/batch_encoders.h"

namespace skippr {

namespace {

enum class OutputFormat { kJsonl, kCsv, kParquet };

struct FileSinkOptions {
  std::string name;
  std::filesystem::path folder;
  OutputFormat format = OutputFormat::kParquet;
  Compression compression = Compression::kNone;  // jsonl and csv: the whole file
  std::string parquet_compression = "zstd";      // parquet: its column chunks
};

Status fsync_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("cannot open {} to sync it: {}", path.string(), std::strerror(errno)));
  }
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0)
    return fail(ErrorKind::kFatalIo, fmt::format("fsync of {} failed: {}", path.string(), std::strerror(saved)));
  return ok();
}

class FileSink final : public Sink {
 public:
  explicit FileSink(FileSinkOptions options) : options_(std::move(options)) {}

  Guarantee guarantee() const override { return Guarantee::kOverwriteOnRetry; }

  Status open() override {
    auto made = shared_files_env().create_dirs(options_.folder);
    if (!made) {
      return fail(ErrorKind::kUnavailable, fmt::format("File sink '{}': cannot create the folder {}: {}", options_.name,
                                                       options_.folder.string(), made.error().message));
    }
    return ok();
  }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position&) override {
    if (batch.rows == 0) return WriteOutcome::kApplied;  // a batch of dead letters only: no file
    const std::filesystem::path path = options_.folder / file_name(id);
    auto written = write_file(batch, path);
    if (!written) {
      return fail(written.error().kind, fmt::format("File sink '{}': writing batch {} to {}: {}", options_.name,
                                                    id.str(), path.string(), written.error().message));
    }
    return WriteOutcome::kApplied;
  }

 private:
  // <pipeline>-<epoch>-<lineage>-<seq>: the lineage keeps a new DATA_DIR (or a RESET) from overwriting the files
  // of an earlier one; a batch committed before lineages existed keeps the name it had (a retry rewrites it).
  std::string file_name(const BatchId& id) const {
    static constexpr const char* kExtensions[] = {".jsonl", ".csv", ".parquet"};
    const std::string lineage = id.lineage.empty() ? std::string() : id.lineage + "-";
    return fmt::format("{}-{:06}-{}{:020}{}{}", id.pipeline, id.epoch, lineage, id.seq,
                       kExtensions[static_cast<int>(options_.format)], extension_of(options_.compression));
  }

  Status write_file(const Batch& batch, const std::filesystem::path& path) {
    if (options_.format != OutputFormat::kParquet) {
      std::string text = options_.format == OutputFormat::kJsonl ? encode_jsonl(batch) : encode_csv(batch);
      if (options_.compression != Compression::kNone) {
        auto packed = compress_buffer(text, options_.compression);
        if (!packed) return std::unexpected(packed.error());
        text = std::move(*packed);
      }
      return write_file_atomically(shared_files_env(), path, text);  // .tmp, fsync, rename, fsync dir
    }
    if (!parquet_) {
      auto writer = ParquetFileWriter::open();
      if (!writer) return std::unexpected(writer.error());
      parquet_.emplace(std::move(*writer));
    }
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    SKIPPR_TRY(parquet_->write(batch, tmp, options_.parquet_compression));
    SKIPPR_TRY(fsync_file(tmp));
    SKIPPR_TRY(shared_files_env().rename(tmp, path));
    return shared_files_env().fsync_dir(options_.folder);
  }

  FileSinkOptions options_;
  std::optional<ParquetFileWriter> parquet_;
};

}  // namespace

ConnectorSpec file_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "File";
  spec.is_source = false;
  spec.summary = "one file per batch (Parquet, JSON lines or CSV) in a local folder";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.params = {
      {"path", ParamType::kPath, true, nullptr, "the folder the files are written to; created when absent"},
      {"format", ParamType::kString, false, "parquet", "parquet, jsonl or csv"},
      {"compression", ParamType::kString, false, "auto",
       "auto (zstd inside Parquet, none for jsonl/csv), none, gzip or zstd"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("sink '{}': landing {} is not supported by File; use append",
                                                  ctx.name, to_string(ctx.landing)));
    }
    FileSinkOptions o;
    o.name = ctx.name;
    o.folder = ctx.params.value("path", std::string());
    const std::string format = ctx.params.value("format", std::string("parquet"));
    if (format == "parquet") {
      o.format = OutputFormat::kParquet;
    } else if (format == "jsonl") {
      o.format = OutputFormat::kJsonl;
    } else if (format == "csv") {
      o.format = OutputFormat::kCsv;
    } else {
      return fail(ErrorKind::kConfig,
                  fmt::format("File sink '{}': format '{}' is not parquet, jsonl or csv", ctx.name, format));
    }
    const std::string compression = ctx.params.value("compression", std::string("auto"));
    if (compression != "auto") {
      auto c = compression_from_string(compression);
      if (!c) {
        return fail(ErrorKind::kConfig, fmt::format("File sink '{}': compression '{}' is not auto, none, gzip or zstd",
                                                    ctx.name, compression));
      }
      if (o.format == OutputFormat::kParquet) {
        o.parquet_compression = *c == Compression::kNone ? "uncompressed" : to_string(*c);
      } else {
        o.compression = *c;
      }
    }
    return std::make_unique<FileSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
