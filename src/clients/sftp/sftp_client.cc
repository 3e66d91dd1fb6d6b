#include "clients/sftp/sftp_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace skippr {

struct SftpClient::Handles {
  ssh_session session = nullptr;
  sftp_session sftp = nullptr;
  std::string where;  // "user@host:port", for messages
  bool fsync = false;
  ~Handles() {
    if (sftp) sftp_free(sftp);
    if (session) {
      if (ssh_is_connected(session)) ssh_disconnect(session);
      ssh_free(session);
    }
  }
};

namespace {

// sftp_write sends one request per call and waits for its status; 64 KiB stays well inside what OpenSSH's server
// takes in one message (256 KiB) and needs few round trips.
constexpr size_t kWriteChunk = 64 << 10;
// One read request per chunk: memory is bounded by it whatever the file's size. A server may answer with fewer bytes
// (OpenSSH caps each answer); a short answer is simply followed by the next request.
constexpr size_t kReadChunk = 256 << 10;

struct KeyFree {
  void operator()(ssh_key key) const { ssh_key_free(key); }
};
using KeyPtr = std::unique_ptr<std::remove_pointer_t<ssh_key>, KeyFree>;

struct AttributesFree {
  void operator()(sftp_attributes a) const { sftp_attributes_free(a); }
};
using AttributesPtr = std::unique_ptr<std::remove_pointer_t<sftp_attributes>, AttributesFree>;

struct DirClose {
  void operator()(sftp_dir dir) const { sftp_closedir(dir); }
};
using DirPtr = std::unique_ptr<std::remove_pointer_t<sftp_dir>, DirClose>;

struct FileClose {
  void operator()(sftp_file file) const { sftp_close(file); }
};
using FilePtr = std::unique_ptr<std::remove_pointer_t<sftp_file>, FileClose>;

// Version 3 attributes carry mtime as 32-bit seconds; later versions as 64-bit seconds plus, when flagged, nanoseconds.
int64_t mtime_ns_of(const sftp_session_struct& sftp, const sftp_attributes_struct& a) {
  if (sftp.version <= 3) return static_cast<int64_t>(a.mtime) * 1'000'000'000;
  const int64_t nanos = (a.flags & SSH_FILEXFER_ATTR_SUBSECOND_TIMES) ? a.mtime_nseconds : 0;
  return static_cast<int64_t>(a.mtime64) * 1'000'000'000 + nanos;
}

std::string join(const std::string& folder, const std::string& name) {
  if (folder.empty()) return name;
  return folder.ends_with('/') ? folder + name : folder + "/" + name;
}

std::string describe(const SftpFileInfo& f) { return fmt::format("{} bytes, mtime {} ns", f.size, f.mtime_ns); }

Status check_host_key(ssh_session session, const SftpOptions& o, const std::string& where) {
  if (!o.strict_host_key_checking) return ok();
  const std::string file = o.known_hosts_file.string();
  switch (ssh_session_is_known_server(session)) {
    case SSH_KNOWN_HOSTS_OK:
      return ok();
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
      return fail(ErrorKind::kConfig,
                  fmt::format("the host key of {}:{} does not match the one in known_hosts_file {} (someone may be "
                              "intercepting the connection; if the server's key was changed on purpose, update that "
                              "file)",
                              o.host, o.port, file));
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN:
      return fail(ErrorKind::kConfig,
                  fmt::format("{}:{} is not in known_hosts_file {}; add its host key (ssh-keyscan -p {} {} >> {}) or "
                              "set strict_host_key_checking: false",
                              o.host, o.port, file, o.port, o.host, file));
    case SSH_KNOWN_HOSTS_ERROR:
      break;
  }
  return fail(ErrorKind::kConfig, fmt::format("cannot check the host key of {} against known_hosts_file {}: {}", where,
                                              file, ssh_get_error(session)));
}

Status log_in(ssh_session session, const SftpOptions& o, const std::string& where) {
  int rc = SSH_AUTH_ERROR;
  std::string credential;
  if (!o.private_key_file.empty()) {
    ssh_key raw = nullptr;
    if (ssh_pki_import_privkey_file(o.private_key_file.c_str(), nullptr, nullptr, nullptr, &raw) != SSH_OK) {
      return fail(ErrorKind::kConfig,
                  fmt::format("cannot read the private key in {} (missing, unreadable, not a key, or protected by a "
                              "passphrase)",
                              o.private_key_file.string()));
    }
    KeyPtr key(raw);
    rc = ssh_userauth_publickey(session, nullptr, key.get());
    credential = fmt::format("the key in {}", o.private_key_file.string());
  } else {
    rc = ssh_userauth_password(session, nullptr, o.password.c_str());
    credential = "the password";
  }
  if (rc == SSH_AUTH_SUCCESS) return ok();
  if (rc == SSH_AUTH_ERROR && !ssh_is_connected(session)) {
    return fail(ErrorKind::kUnavailable, fmt::format("the connection to {} broke while logging in", where));
  }
  // DENIED and PARTIAL (the server wants a second factor) alike: these credentials alone do not let us in.
  return fail(ErrorKind::kConfig, fmt::format("{}:{} refused {} for user '{}'", o.host, o.port, credential, o.user));
}

}  // namespace

SftpClient::SftpClient(std::unique_ptr<Handles> handles) : h_(std::move(handles)) {}
SftpClient::SftpClient(SftpClient&&) noexcept = default;
SftpClient& SftpClient::operator=(SftpClient&&) noexcept = default;
SftpClient::~SftpClient() = default;

Result<SftpClient> SftpClient::connect(const SftpOptions& o) {
  auto h = std::make_unique<Handles>();
  h->where = fmt::format("{}@{}:{}", o.user, o.host, o.port);
  h->session = ssh_new();
  if (!h->session) return fail(ErrorKind::kInternal, "cannot create an SSH session");
  ssh_session s = h->session;
  const long timeout = o.timeout_seconds;
  const bool no = false;
  const std::string known_hosts = o.known_hosts_file.string();
  // Only what the options say: no ~/.ssh/config, and the given known_hosts file is the one host keys are checked in.
  if (ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no) != SSH_OK ||
      ssh_options_set(s, SSH_OPTIONS_HOST, o.host.c_str()) != SSH_OK ||
      ssh_options_set(s, SSH_OPTIONS_PORT, &o.port) != SSH_OK ||
      ssh_options_set(s, SSH_OPTIONS_USER, o.user.c_str()) != SSH_OK ||
      ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout) != SSH_OK ||
      ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, known_hosts.c_str()) != SSH_OK ||
      ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, known_hosts.c_str()) != SSH_OK) {
    return fail(ErrorKind::kConfig, fmt::format("invalid SSH options for {}: {}", h->where, ssh_get_error(s)));
  }
  if (ssh_connect(s) != SSH_OK) {
    return fail(ErrorKind::kUnavailable, fmt::format("cannot reach {}: {}", h->where, ssh_get_error(s)));
  }
  SKIPPR_TRY(check_host_key(s, o, h->where));
  SKIPPR_TRY(log_in(s, o, h->where));
  h->sftp = sftp_new(s);
  if (!h->sftp || sftp_init(h->sftp) != SSH_OK) {
    if (!ssh_is_connected(s)) {
      return fail(ErrorKind::kUnavailable, fmt::format("the connection to {} broke while starting SFTP", h->where));
    }
    return fail(ErrorKind::kConfig, fmt::format("{} does not offer SFTP: {}", h->where, ssh_get_error(s)));
  }
  h->fsync = sftp_extension_supported(h->sftp, "fsync@openssh.com", "1") == 1;
  return SftpClient(std::move(h));
}

bool SftpClient::fsync_supported() const { return h_->fsync; }
bool SftpClient::connected() const { return h_ && h_->session && ssh_is_connected(h_->session); }

Error SftpClient::error_of(const std::string& what, ErrorKind broken_connection) const {
  if (!connected()) {
    return Error{broken_connection, fmt::format("{}: the connection to {} broke", what, h_->where)};
  }
  switch (sftp_get_error(h_->sftp)) {
    case SSH_FX_NO_SUCH_FILE:
    case SSH_FX_NO_SUCH_PATH:
      return Error{ErrorKind::kConfig, fmt::format("{}: no such file or folder", what)};
    case SSH_FX_PERMISSION_DENIED:
    case SSH_FX_WRITE_PROTECT:
      return Error{ErrorKind::kConfig, fmt::format("{}: permission denied for {}", what, h_->where)};
    default:
      // SSH_FX_FAILURE covers a full disk and other passing trouble on the server: worth retrying.
      return Error{ErrorKind::kUnavailable, fmt::format("{}: {}", what, ssh_get_error(h_->session))};
  }
}

Result<bool> SftpClient::exists(const std::string& path) {
  AttributesPtr attributes(sftp_stat(h_->sftp, path.c_str()));
  if (attributes) return true;
  if (connected() && sftp_get_error(h_->sftp) == SSH_FX_NO_SUCH_FILE) return false;
  return std::unexpected(error_of(fmt::format("cannot look up {}", path)));
}

Status SftpClient::check_directory(const std::string& path) {
  AttributesPtr attributes(sftp_stat(h_->sftp, path.c_str()));
  if (!attributes) {
    Error e = error_of(fmt::format("the remote folder {} on {}", path, h_->where));
    if (e.kind == ErrorKind::kConfig && sftp_get_error(h_->sftp) != SSH_FX_PERMISSION_DENIED) {
      e.message = fmt::format("the remote folder {} does not exist on {}; create it", path, h_->where);
    }
    return std::unexpected(std::move(e));
  }
  if (attributes->type != SSH_FILEXFER_TYPE_DIRECTORY) {
    return fail(ErrorKind::kConfig, fmt::format("{} on {} is not a folder", path, h_->where));
  }
  return ok();
}

Status SftpClient::check_writable(const std::string& file) {
  sftp_file handle = sftp_open(h_->sftp, file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!handle) {
    Error e = error_of(fmt::format("cannot create files like {}", file));
    if (e.kind == ErrorKind::kConfig) {
      e.message = fmt::format("{} may not create files in {} (permission denied)", h_->where,
                              file.substr(0, file.rfind('/') + 1));
    }
    return std::unexpected(std::move(e));
  }
  if (sftp_close(handle) != 0) return std::unexpected(error_of(fmt::format("cannot close {}", file)));
  return remove(file);
}

Status SftpClient::mkdir_p(const std::string& existing_base, const std::string& path) {
  if (path.size() <= existing_base.size()) return ok();
  // Each component below the base, shortest first; one that exists already (made by an earlier batch or another
  // writer) is fine.
  for (size_t end = path.find('/', existing_base.size() + 1);; end = path.find('/', end + 1)) {
    const std::string folder = path.substr(0, end);
    if (sftp_mkdir(h_->sftp, folder.c_str(), 0755) != 0) {
      const int code = connected() ? sftp_get_error(h_->sftp) : SSH_FX_CONNECTION_LOST;
      if (code != SSH_FX_FILE_ALREADY_EXISTS && code != SSH_FX_FAILURE) {
        return std::unexpected(error_of(fmt::format("cannot make the folder {}", folder)));
      }
      SKIPPR_TRY(check_directory(folder));  // OpenSSH says FAILURE for EEXIST: make sure it is a folder
    }
    if (end == std::string::npos) return ok();
  }
}

Result<SftpPutOutcome> SftpClient::write_file_atomically(const std::string& tmp, const std::string& final_path,
                                                         std::string_view bytes,
                                                         const std::function<void()>& before_rename) {
  auto there = exists(final_path);
  if (!there) return std::unexpected(there.error());
  if (*there) return SftpPutOutcome::kAlreadyExists;

  sftp_file file = sftp_open(h_->sftp, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!file) return std::unexpected(error_of(fmt::format("cannot create {}", tmp)));
  for (size_t done = 0; done < bytes.size();) {
    const size_t n = std::min(kWriteChunk, bytes.size() - done);
    const ssize_t wrote = sftp_write(file, bytes.data() + done, n);
    if (wrote <= 0) {
      Error e = error_of(fmt::format("cannot write {}", tmp));
      sftp_close(file);
      return std::unexpected(std::move(e));
    }
    done += static_cast<size_t>(wrote);
  }
  if (h_->fsync && sftp_fsync(file) != 0) {
    Error e = error_of(fmt::format("cannot fsync {}", tmp));
    sftp_close(file);
    return std::unexpected(std::move(e));
  }
  if (sftp_close(file) != 0) return std::unexpected(error_of(fmt::format("cannot close {}", tmp)));
  if (before_rename) before_rename();

  if (sftp_rename(h_->sftp, tmp.c_str(), final_path.c_str()) == 0) return SftpPutOutcome::kCreated;
  // The rename may have happened if the connection broke: only a retry under the same names can tell.
  Error rename_error = error_of(fmt::format("cannot rename {} to {}", tmp, final_path), ErrorKind::kUnknownOutcome);
  auto landed = exists(final_path);
  if (landed && *landed) {
    // SFTP v3 refuses a rename onto an existing name: another attempt of this batch landed it first.
    (void)remove(tmp);
    return SftpPutOutcome::kAlreadyExists;
  }
  return std::unexpected(std::move(rename_error));
}

Status SftpClient::remove(const std::string& path) {
  if (sftp_unlink(h_->sftp, path.c_str()) == 0) return ok();
  if (connected() && sftp_get_error(h_->sftp) == SSH_FX_NO_SUCH_FILE) return ok();
  return std::unexpected(error_of(fmt::format("cannot remove {}", path)));
}

Result<std::optional<SftpFileInfo>> SftpClient::stat(const std::string& path) {
  AttributesPtr a(sftp_stat(h_->sftp, path.c_str()));
  if (!a) {
    const int code = connected() ? sftp_get_error(h_->sftp) : SSH_FX_CONNECTION_LOST;
    if (code == SSH_FX_NO_SUCH_FILE || code == SSH_FX_NO_SUCH_PATH) return std::optional<SftpFileInfo>();
    return std::unexpected(error_of(fmt::format("cannot look up {}", path)));
  }
  if (a->type != SSH_FILEXFER_TYPE_REGULAR) return std::optional<SftpFileInfo>();  // a folder now: the file is gone
  return std::optional<SftpFileInfo>(SftpFileInfo{path, a->size, mtime_ns_of(*h_->sftp, *a)});
}

Status SftpClient::check_listable(const std::string& folder) {
  const std::string path = folder.empty() ? "." : folder;
  DirPtr dir(sftp_opendir(h_->sftp, path.c_str()));
  if (dir) return ok();
  const int code = connected() ? sftp_get_error(h_->sftp) : SSH_FX_CONNECTION_LOST;
  // Missing (files may come later) or not a folder (FAILURE is OpenSSH's ENOTDIR): the listing finds no files.
  if (code == SSH_FX_NO_SUCH_FILE || code == SSH_FX_NO_SUCH_PATH || code == SSH_FX_FAILURE) return ok();
  return std::unexpected(error_of(fmt::format("cannot list the folder {}", path)));
}

Result<std::vector<SftpFileInfo>> SftpClient::list_files(const std::string& folder, bool recursive) {
  std::vector<SftpFileInfo> out;
  std::vector<std::string> pending = {""};  // folders still to read, relative to `folder`
  while (!pending.empty()) {
    const std::string relative = std::move(pending.back());
    pending.pop_back();
    const std::string path = relative.empty() ? (folder.empty() ? "." : folder) : join(folder, relative);
    DirPtr dir(sftp_opendir(h_->sftp, path.c_str()));
    if (!dir) {
      const int code = connected() ? sftp_get_error(h_->sftp) : SSH_FX_CONNECTION_LOST;
      // Not there (yet, or no longer: removed while the walk went on): no files in it.
      if (code == SSH_FX_NO_SUCH_FILE || code == SSH_FX_NO_SUCH_PATH) continue;
      if (code == SSH_FX_FAILURE) {
        // OpenSSH says FAILURE for ENOTDIR too: a file where the folder should be holds no matches either.
        AttributesPtr a(sftp_stat(h_->sftp, path.c_str()));
        if (a && a->type != SSH_FILEXFER_TYPE_DIRECTORY) continue;
      }
      return std::unexpected(error_of(fmt::format("cannot list the folder {}", path)));
    }
    while (AttributesPtr a{sftp_readdir(h_->sftp, dir.get())}) {
      const std::string name = a->name ? a->name : "";
      if (name.empty() || name == "." || name == "..") continue;
      const std::string child = relative.empty() ? name : relative + "/" + name;
      if (a->type == SSH_FILEXFER_TYPE_REGULAR) {
        out.push_back({child, a->size, mtime_ns_of(*h_->sftp, *a)});
      } else if (a->type == SSH_FILEXFER_TYPE_DIRECTORY) {
        if (recursive) pending.push_back(child);
      } else if (a->type == SSH_FILEXFER_TYPE_SYMLINK) {
        // A link to a file is read like the file; a link to a folder is not walked (it could lead back up).
        auto target = stat(join(folder, child));
        if (!target) return std::unexpected(target.error());
        if (*target) out.push_back({child, (*target)->size, (*target)->mtime_ns});
      }
    }
    if (!sftp_dir_eof(dir.get())) return std::unexpected(error_of(fmt::format("cannot list the folder {}", path)));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

Status SftpClient::download(const std::string& path, const SftpFileInfo& expected, std::FILE* out) {
  const auto changed = [&](const char* how, const std::string& now) {
    return fail(ErrorKind::kBadInput, fmt::format("{} was {} while it was being read (listed with {}; {})", path, how,
                                                  describe(expected), now));
  };
  // The attributes of the open handle, not of the name: a file renamed over it meanwhile is not what is read.
  const auto check_version = [&](sftp_file file) -> Status {
    AttributesPtr a(sftp_fstat(file));
    if (!a) return std::unexpected(error_of(fmt::format("cannot look up {}", path)));
    const SftpFileInfo now{expected.path, a->size, mtime_ns_of(*h_->sftp, *a)};
    if (now != expected) return changed("replaced", "now " + describe(now));
    return ok();
  };
  FilePtr file(sftp_open(h_->sftp, path.c_str(), O_RDONLY, 0));
  if (!file) {
    const int code = connected() ? sftp_get_error(h_->sftp) : SSH_FX_CONNECTION_LOST;
    if (code == SSH_FX_NO_SUCH_FILE || code == SSH_FX_NO_SUCH_PATH) return changed("deleted", "now gone");
    return std::unexpected(error_of(fmt::format("cannot open {}", path)));
  }
  SKIPPR_TRY(check_version(file.get()));
  std::vector<char> buffer(kReadChunk);
  uint64_t total = 0;
  for (;;) {
    const ssize_t got = sftp_read(file.get(), buffer.data(), buffer.size());
    if (got < 0) return std::unexpected(error_of(fmt::format("cannot read {}", path)));
    if (got == 0) break;
    total += static_cast<uint64_t>(got);
    // Grown within the second its mtime names: more bytes than the version listed has.
    if (total > expected.size) return changed("replaced", fmt::format("now more than {} bytes", expected.size));
    if (std::fwrite(buffer.data(), 1, static_cast<size_t>(got), out) != static_cast<size_t>(got)) {
      const int e = errno;
      return fail(e == ENOSPC ? ErrorKind::kDiskFull : ErrorKind::kFatalIo,
                  fmt::format("cannot write the download of {}: {}", path, std::strerror(e)));
    }
  }
  return check_version(file.get());
}

}  // namespace skippr
