#include "sinks/sftp/sftp_sink.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "clients/sftp/sftp_client.h"
#include "core/failpoint.h"
#include "sinks/object_sink.h"

namespace skippr {
namespace {

struct SftpSinkOptions {
  std::string name;          // the sink's name in skippr.yml
  ObjectSinkOptions object;  // its prefix is the remote base folder, with a trailing '/'
  std::string folder;        // the remote base folder, without it
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

std::filesystem::path default_known_hosts() {
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/root") / ".ssh" / "known_hosts";
}

}  // namespace

ConnectorSpec sftp_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "SFTP";
  spec.is_source = false;
  spec.summary = "one file per batch (Parquet, JSON lines or CSV) in a folder on an SFTP server (.tmp, fsync, rename)";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.params = {
      {"host", ParamType::kString, true, nullptr, "the SFTP server"},
      {"port", ParamType::kInt, false, 22, "its SSH port"},
      {"user", ParamType::kString, true, nullptr, "the user to log in as"},
      {"private_key_file", ParamType::kPath, false, nullptr,
       "an unencrypted private key (OpenSSH or PEM) to log in with; or give password"},
      {"password", ParamType::kString, false, nullptr, "use ${VAR} to keep it out of the file"},
      {"known_hosts_file", ParamType::kPath, false, nullptr,
       "the server's host key must be in it (default: ~/.ssh/known_hosts)"},
      {"strict_host_key_checking", ParamType::kBool, false, true,
       "false accepts any host key without checking: only for a trusted network"},
      {"path", ParamType::kString, true, nullptr, "the remote folder the files go to; it must exist"},
      {"create_dirs", ParamType::kBool, false, true, "make the partition_by folders under path as needed"},
      {"timeout_seconds", ParamType::kInt, false, 30, "for connecting and for every call to the server"},
  };
  for (auto& param : object_sink_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    auto object = read_object_sink_options(ctx, "SFTP", "");
    if (!object) return std::unexpected(object.error());
    SftpSinkOptions o;
    o.name = ctx.name;
    o.object = std::move(*object);
    const std::string& what = o.object.what;
    o.folder = p.value("path", std::string());
    while (o.folder.size() > 1 && o.folder.back() == '/') o.folder.pop_back();
    if (o.folder.empty()) return fail(ErrorKind::kConfig, fmt::format("{}: path must name a remote folder", what));
    o.object.prefix = o.folder == "/" ? "/" : o.folder + "/";
    o.create_dirs = p.value("create_dirs", true);
    o.sftp.host = p.value("host", std::string());
    o.sftp.user = p.value("user", std::string());
    const int64_t port = p.value("port", int64_t{22});
    const int64_t timeout = p.value("timeout_seconds", int64_t{30});
    if (o.sftp.host.empty() || o.sftp.user.empty() || port <= 0 || port > 65535 || timeout <= 0) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: host and user must be set, port be 1-65535 and timeout_seconds positive", what));
    }
    o.sftp.port = static_cast<int>(port);
    o.sftp.timeout_seconds = static_cast<long>(timeout);
    o.sftp.private_key_file = p.value("private_key_file", std::string());
    o.sftp.password = p.value("password", std::string());
    if (o.sftp.private_key_file.empty() == o.sftp.password.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("{}: give private_key_file or password (one of them)", what));
    }
    const std::string known_hosts = p.value("known_hosts_file", std::string());
    o.sftp.known_hosts_file = known_hosts.empty() ? default_known_hosts() : std::filesystem::path(known_hosts);
    o.sftp.strict_host_key_checking = p.value("strict_host_key_checking", true);
    return std::make_unique<SftpSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
