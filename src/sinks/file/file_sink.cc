#include "sinks/file/file_sink.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "core/env.h"
#include "formats/compression.h"
#include "formats/object_encoding.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {

namespace {

struct FileSinkOptions {
  std::string name;
  std::string folder;  // ending in '/'; with {stream} for a source of several streams (sinks/kit/stream_tables.h)
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
      : options_(std::move(options)), base_(stream_prefix_base(options_.folder)), encoder_(options_.encoding, base_) {}

  Guarantee guarantee() const override { return Guarantee::kOverwriteOnRetry; }

  Status open() override { return make_folder(base_); }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position&) override {
    if (batch.rows == 0) return WriteOutcome::kApplied;  // a batch of dead letters only: no file
    const std::filesystem::path folder = stream_prefix_for(options_.folder, batch.stream);
    if (!made_folders_.contains(folder)) {  // a stream's folder, the first time it lands
      SKIPPR_TRY(make_folder(folder));
      made_folders_.insert(folder);
    }
    const std::filesystem::path path = folder / file_name(id);
    // A file under the batch's name is whole (it is renamed into place): a replay finds it and leaves it, as the
    // object stores do.
    if (auto there = shared_files_env().exists(path); there && *there) return WriteOutcome::kAlreadyApplied;
    auto written = write_file(batch, path);
    if (!written) {
      return fail(written.error().kind, fmt::format("File sink '{}': writing batch {} to {}: {}", options_.name,
                                                    id.str(), path.string(), written.error().message));
    }
    return WriteOutcome::kApplied;
  }

 private:
  std::string file_name(const BatchId& id) const { return batch_object_name(id, options_.encoding); }

  Status make_folder(const std::filesystem::path& folder) const {
    auto made = shared_files_env().create_dirs(folder);
    if (!made) {
      return fail(ErrorKind::kUnavailable, fmt::format("File sink '{}': cannot create the folder {}: {}", options_.name,
                                                       folder.string(), made.error().message));
    }
    return ok();
  }

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
    return shared_files_env().fsync_dir(path.parent_path());
  }

  FileSinkOptions options_;
  std::string base_;  // the folder above every stream's (the folder itself for one stream)
  ObjectEncoder encoder_;
  std::set<std::filesystem::path> made_folders_;
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
  lands_streams_in_folders(spec, "path");
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("sink '{}': landing {} is not supported by File; use append",
                                                  ctx.name, to_string(ctx.landing)));
    }
    FileSinkOptions o;
    o.name = ctx.name;
    std::string folder = ctx.params.value("path", std::string());
    if (folder.empty() || folder.back() != '/') folder += '/';
    auto streamed =
        stream_prefix(fmt::format("File sink '{}'", ctx.name), "path", std::move(folder), ctx.source_streams);
    if (!streamed) return std::unexpected(streamed.error());
    o.folder = std::move(*streamed);
    auto encoding = read_object_encoding(ctx.params, fmt::format("File sink '{}'", ctx.name));
    if (!encoding) return std::unexpected(encoding.error());
    o.encoding = std::move(*encoding);
    return std::make_unique<FileSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
