#include "sources/file/sftp_file_store.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "sources/file/remote_file_store.h"

namespace skippr {
namespace {

// SFTP has no content version (no ETag): a file's size and mtime stand for it, so a file rewritten after it was read
// is found like a replaced object. So is a file appended to after it was read (or read while still being written):
// it then counts as replaced, an error naming it rather than rows read twice or lost. That is the safe reading of a
// remote folder, whose writers should upload under a temp name and rename, or use new names. SFTP v3 gives whole
// seconds, so a rewrite to the same size within the same second goes unseen.
FileIdentity identity_of(const SftpFileInfo& file) {
  return FileIdentity{file.size, file.mtime_ns, fmt::format("{}:{}", file.size, file.mtime_ns)};
}

class SftpFileStore final : public RemoteFileStore {
 public:
  SftpFileStore(RemoteLocation location, SftpOptions options, std::filesystem::path cache_dir, std::string where)
      : RemoteFileStore(std::move(cache_dir), std::move(where)),
        location_(std::move(location)),
        options_(std::move(options)) {
    // "~/in/" is relative to the login folder (where OpenSSH resolves relative paths); anything else is absolute.
    const bool home = location_.prefix.starts_with("~/");
    remote_prefix_ = home ? location_.prefix.substr(2) : "/" + location_.prefix;
    // Only a pattern with more than one segment (or a `**`) looks below the base folder.
    recursive_ = location_.pattern.segments.size() > 1;
    for (const auto& segment : location_.pattern.segments) recursive_ = recursive_ || segment == "**";
  }

  Status open() override {
    if (client_ && client_->connected()) return ok();
    client_.reset();
    auto client = SftpClient::connect(options_);
    if (!client) return fail(client.error().kind, fmt::format("{}: {}", where(), client.error().message));
    // A folder the user may not read is found before the sink opens; a missing one may be made later.
    if (auto listable = client->check_listable(folder()); !listable) return failed(listable.error());
    client_.emplace(std::move(*client));
    return ok();
  }

  Result<std::vector<StoredFile>> list() override {
    SKIPPR_TRY(open());
    auto files = client_->list_files(folder(), recursive_);
    if (!files) return failed(files.error());
    std::vector<StoredFile> out;
    for (const auto& file : *files) {
      if (auto name = location_.name_of(location_.prefix + file.path)) out.push_back({*name, identity_of(file)});
    }
    return out;
  }

  Result<std::optional<FileIdentity>> identity(const std::string& name) override {
    SKIPPR_TRY(open());
    auto file = client_->stat(remote_prefix_ + name);
    if (!file) return failed(file.error());
    if (!*file) return std::optional<FileIdentity>();
    return std::optional<FileIdentity>(identity_of(**file));
  }

  std::string display(const std::string& name) const override {
    return fmt::format("sftp://{}/{}{}", location_.container, location_.prefix, name);
  }

 private:
  // "/a/b/" is the folder "/a/b"; "/" the root; "" the home folder itself (listed as ".").
  std::string folder() const {
    return remote_prefix_.size() <= 1 ? remote_prefix_ : remote_prefix_.substr(0, remote_prefix_.size() - 1);
  }

  Status download(const std::string& name, const FileIdentity& identity, std::FILE* file) override {
    SKIPPR_TRY(open());
    const std::string path = remote_prefix_ + name;
    auto done = client_->download(path, SftpFileInfo{path, identity.size, identity.mtime_ns}, file);
    if (done) return ok();
    Error e = done.error();
    // Named as the pattern names it, like an object: the client knows only the server's path.
    if (e.message.starts_with(path)) e.message = display(name) + e.message.substr(path.size());
    if (!client_->connected()) client_.reset();
    return std::unexpected(std::move(e));
  }

  // A broken connection does not heal: the next call connects again.
  std::unexpected<Error> failed(const Error& e) {
    if (client_ && !client_->connected()) client_.reset();
    return std::unexpected(Error{e.kind, fmt::format("{}: {}", where(), e.message)});
  }

  RemoteLocation location_;
  SftpOptions options_;
  std::string remote_prefix_;  // the server's path of the pattern's base folder, ending in '/' (or empty: home)
  bool recursive_ = false;
  std::optional<SftpClient> client_;
};

// `[user@]host[:port]` (an IPv6 host in brackets), checked against what the parameters say.
Status apply_authority(const std::string& authority, bool port_given, SftpOptions& o, std::string_view where) {
  std::string hostport = authority;
  if (const size_t at = authority.rfind('@'); at != std::string::npos) {
    const std::string user = authority.substr(0, at);
    if (!o.user.empty() && o.user != user) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the path's user '{}' and the user parameter '{}' differ; give "
                                                  "it in one place",
                                                  where, user, o.user));
    }
    o.user = user;
    hostport = authority.substr(at + 1);
  }
  const size_t bracket = hostport.find(']');
  const size_t colon = hostport.find(':', bracket == std::string::npos ? 0 : bracket);
  o.host = hostport.substr(0, colon);
  if (o.host.starts_with('[') && o.host.ends_with(']')) o.host = o.host.substr(1, o.host.size() - 2);
  if (colon != std::string::npos) {
    const std::string text = hostport.substr(colon + 1);
    int port = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc() || end != text.data() + text.size() || port <= 0 || port > 65535) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the path's port '{}' is not 1-65535", where, text));
    }
    if (port_given && port != o.port) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the path's port {} and the port parameter {} differ; give it in "
                                                  "one place",
                                                  where, port, o.port));
    }
    o.port = port;
  }
  if (o.host.empty()) return fail(ErrorKind::kConfig, fmt::format("{}: the path names no host", where));
  if (o.user.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: give the user to log in as (the user parameter, or "
                                                "sftp://user@host/...)",
                                                where));
  }
  return ok();
}

}  // namespace

bool is_sftp_url(std::string_view path) { return path.starts_with("sftp://"); }

Result<std::unique_ptr<FileStore>> sftp_file_store(const std::string& url, SftpOptions options, bool port_given,
                                                   std::filesystem::path cache_dir, std::string where) {
  const std::string rest = url.substr(url.find("://") + 3);
  // user:password@ would put the password in every message and dead letter naming a file: refused, not echoed.
  if (const size_t at = rest.substr(0, rest.find('/')).rfind('@');
      at != std::string::npos && rest.substr(0, at).find(':') != std::string::npos) {
    return fail(ErrorKind::kConfig, fmt::format("{}: path must not carry a password (sftp://user:...@host); give it "
                                                "in the password parameter, e.g. password: \"${{SFTP_PASSWORD}}\"",
                                                where));
  }
  if (const size_t slash = rest.find('/'); slash == 0 || slash == std::string::npos || slash + 1 == rest.size()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: path '{}' must be sftp://[user@]host[:port]/<folder>/<pattern>, "
                                                "e.g. sftp://files.example.com/data/in/*.jsonl.gz",
                                                where, url));
  }
  auto location = parse_remote_location(url, where);
  if (!location) return std::unexpected(location.error());
  SKIPPR_TRY(apply_authority(location->container, port_given, options, where));
  return std::make_unique<SftpFileStore>(std::move(*location), std::move(options), std::move(cache_dir),
                                         std::move(where));
}

}  // namespace skippr
