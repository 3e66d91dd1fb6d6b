#include "sinks/file/file_sink.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "core/env.h"
#include "formats/compression.h"
#include "formats/object_encoding.h"

namespace skippr {

namespace {

struct FileSinkOptions {
  std::string name;
  std::filesystem::path folder;
  ObjectEncoding encoding;
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
  explicit FileSink(FileSinkOptions options)
      : options_(std::move(options)), encoder_(options_.encoding, options_.folder) {}

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
  std::string file_name(const BatchId& id) const { return batch_object_name(id, options_.encoding); }

  Status write_file(const Batch& batch, const std::filesystem::path& path) {
    if (options_.encoding.format != OutputFormat::kParquet) {
      auto bytes = encoder_.encode(batch);
      if (!bytes) return std::unexpected(bytes.error());
      return write_file_atomically(shared_files_env(), path, *bytes);  // .tmp, fsync, rename, fsync dir
    }
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    SKIPPR_TRY(encoder_.encode_to_file(batch, tmp));
    SKIPPR_TRY(fsync_file(tmp));
    SKIPPR_TRY(shared_files_env().rename(tmp, path));
    return shared_files_env().fsync_dir(options_.folder);
  }

  FileSinkOptions options_;
  ObjectEncoder encoder_;
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
  };
  for (auto& param : object_encoding_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("sink '{}': landing {} is not supported by File; use append",
                                                  ctx.name, to_string(ctx.landing)));
    }
    FileSinkOptions o;
    o.name = ctx.name;
    o.folder = ctx.params.value("path", std::string());
    auto encoding = read_object_encoding(ctx.params, fmt::format("File sink '{}'", ctx.name));
    if (!encoding) return std::unexpected(encoding.error());
    o.encoding = std::move(*encoding);
    return std::make_unique<FileSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
