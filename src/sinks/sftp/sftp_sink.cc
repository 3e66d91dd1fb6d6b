#include "sinks/sftp/sftp_sink.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <set>

#include "clients/sftp/sftp_client.h"
#include "clients/sftp/sftp_params.h"
#include "core/failpoint.h"
#include "sinks/kit/object_sink.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

struct SftpSinkOptions {
  std::string name;          // the sink's name in skippr.yml
  ObjectSinkOptions object;  // its prefix is the remote base folder, with a trailing '/'
  std::string folder;        // the remote base folder, without it (above the stream folders of several streams)
  bool create_dirs = true;
  SftpOptions sftp;
};

class SftpSink final : public ObjectSink {
 public:
  explicit SftpSink(SftpSinkOptions options) : ObjectSink(std::move(options.object)), options_(std::move(options)) {}

  Status open() override {
    if (client_ && client_->connected()) return ok();
    client_.reset();
    made_folders_.clear();
    auto client = SftpClient::connect(options_.sftp);
    if (!client) return fail(client.error().kind, fmt::format("{}: {}", what(), client.error().message));
    if (auto checked = client->check_directory(options_.folder); !checked) {
      return fail(checked.error().kind, fmt::format("{}: {}", what(), checked.error().message));
    }
    // Permission denied at write time would come after batches are committed (exit 75, retried in vain): probe now.
    const std::string probe = fmt::format("{}/.skippr-probe-{}.tmp", options_.folder, options_.name);
    if (auto writable = client->check_writable(probe); !writable) {
      return fail(writable.error().kind, fmt::format("{}: {}", what(), writable.error().message));
    }
    if (!client->fsync_supported() && !warned_no_fsync_) {
      // Still whole and once (the rename), but a server crash right after may lose a landed file.
      spdlog::warn("{}: the server has no fsync@openssh.com; files are renamed into place without a flush", what());
      warned_no_fsync_ = true;
    }
    make_scratch_dir();
    client_.emplace(std::move(*client));
    return ok();
  }

 private:
  Result<ObjectPut> put_if_absent(const std::string& file, std::string_view bytes, const char*) override {
    const std::string dir = file.substr(0, file.rfind('/'));
    const bool partition_folder = dir.size() > options_.folder.size();  // below the base folder
    if (partition_folder && options_.create_dirs && !made_folders_.contains(dir)) {
      SKIPPR_TRY(client_->mkdir_p(options_.folder, dir));
      made_folders_.insert(dir);
    }
    // A crash here leaves a whole temp that was never renamed: the retry must overwrite it.
    auto put = client_->write_file_atomically(file + ".tmp", file, bytes,
                                              [] { failpoint::hit(failpoint::kSinkInTransaction); });
    if (!put) return std::unexpected(put.error());
    return *put == SftpPutOutcome::kCreated ? ObjectPut::kCreated : ObjectPut::kAlreadyExists;
  }

  // A broken connection does not heal: the engine's retry calls open(), which connects again.
  void write_failed() override {
    if (client_ && !client_->connected()) client_.reset();
  }

  SftpSinkOptions options_;
  std::optional<SftpClient> client_;
  std::set<std::string> made_folders_;  // partition folders this connection made or found: no mkdir per batch
  bool warned_no_fsync_ = false;
};

}  // namespace

ConnectorSpec sftp_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "SFTP";
  spec.is_source = false;
  spec.summary = "one file per batch (Parquet, JSON lines or CSV) in a folder on an SFTP server (.tmp, fsync, rename)";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.params = {{"host", ParamType::kString, true, nullptr, "the SFTP server"}};
  for (auto& param : sftp_connection_params()) {
    param.required = param.required || param.name == "user";  // a File source's URL may name the user; not here
    spec.params.push_back(std::move(param));
  }
  spec.params.push_back(
      {"path", ParamType::kString, true, nullptr, "the remote folder the files go to; it must exist"});
  spec.params.push_back(
      {"create_dirs", ParamType::kBool, false, true, "make the partition_by folders under path as needed"});
  for (auto& param : object_sink_params()) spec.params.push_back(std::move(param));
  lands_streams_in_folders(spec, "path");
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    auto object = read_object_sink_options(ctx, "SFTP", "");
    if (!object) return std::unexpected(object.error());
    SftpSinkOptions o;
    o.name = ctx.name;
    o.object = std::move(*object);
    const std::string& what = o.object.what;
    std::string path = p.value("path", std::string());
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path.empty()) return fail(ErrorKind::kConfig, fmt::format("{}: path must name a remote folder", what));
    auto prefix = stream_prefix(what, "path", path == "/" ? path : path + "/", ctx.source_streams);
    if (!prefix) return std::unexpected(prefix.error());
    o.object.prefix = std::move(*prefix);
    o.folder = stream_prefix_base(o.object.prefix);  // each stream's folder is made under it
    if (o.folder.empty()) o.folder = ".";            // {stream} first in a relative path: the login folder
    o.create_dirs = p.value("create_dirs", true);
    auto sftp = read_sftp_options(p, what);
    if (!sftp) return std::unexpected(sftp.error());
    o.sftp = std::move(*sftp);
    if (o.sftp.host.empty() || o.sftp.user.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("{}: host and user must be set", what));
    }
    return std::make_unique<SftpSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
