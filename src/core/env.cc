#include "core/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

namespace skippr {

namespace fs = std::filesystem;

// Classifies an errno once, so every caller reports a full disk the same way.
Error io_error(std::string_view what, const fs::path& path, int err) {
  if (err == ENOSPC || err == EDQUOT) {
    return Error{ErrorKind::kDiskFull,
                 fmt::format("the disk is full: {} {} failed ({}). Free space on that file system and start again; "
                             "nothing committed is lost",
                             what, path.string(), std::strerror(err))};
  }
  // Permissions and read-only file systems stay as they are however often it is retried: the user must act.
  if (err == EACCES || err == EPERM || err == EROFS) {
    return Error{ErrorKind::kConfig, fmt::format("{} {} failed: {}; check its owner and permissions (or use another "
                                                 "path)",
                                                 what, path.string(), std::strerror(err))};
  }
  return Error{ErrorKind::kUnavailable, fmt::format("{} {} failed: {}", what, path.string(), std::strerror(err))};
}

// A failed fsync leaves the kernel's dirty pages in an unknown state and a second fsync may falsely succeed
// (fsyncgate), so it is fatal, never retryable.
Error sync_error(std::string_view what, const fs::path& path, int err) {
  return Error{ErrorKind::kFatalIo, fmt::format("{} {} failed: {}; stopping because the data may not be durable", what,
                                                path.string(), std::strerror(err))};
}

namespace {

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(fs::path path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status append(std::string_view data) override {
    SKIPPR_TRY(write_at(size_, data));
    return ok();
  }

  Status write_at(uint64_t offset, std::string_view data) override {
    if (fd_ < 0) return fail(ErrorKind::kInternal, fmt::format("write to closed file {}", path_.string()));
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return std::unexpected(io_error("writing", path_, errno));
      }
      done += static_cast<size_t>(n);
    }
    size_ = std::max(size_, offset + data.size());
    return ok();
  }

  Status sync() override {
    if (::fdatasync(fd_) != 0) return std::unexpected(sync_error("fdatasync of", path_, errno));
    return ok();
  }

  Status truncate(uint64_t size) override {
    while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      if (errno != EINTR) return std::unexpected(io_error("truncating", path_, errno));
    }
    size_ = size;
    return ok();
  }

  Status close() override {
    if (fd_ < 0) return ok();
    int rc = ::close(fd_);
    fd_ = -1;
    // close() can report a deferred write error (NFS); treat it like a failed sync.
    if (rc != 0 && errno != EINTR) return std::unexpected(sync_error("closing", path_, errno));
    return ok();
  }

  uint64_t size() const override { return size_; }
  const fs::path& path() const override { return path_; }

 private:
  fs::path path_;
  int fd_;
  uint64_t size_;
};

class PosixEnv final : public Env {
 public:
  PosixEnv(mode_t file_mode, mode_t dir_mode) : file_mode_(file_mode), dir_mode_(dir_mode) {}

  Result<std::unique_ptr<WritableFile>> open_writable(const fs::path& path, OpenMode mode) override {
    int flags = O_WRONLY | O_CLOEXEC;
    switch (mode) {
      case OpenMode::kCreateExclusive:
        flags |= O_CREAT | O_EXCL;
        break;
      case OpenMode::kCreateOrTruncate:
        flags |= O_CREAT | O_TRUNC;
        break;
      case OpenMode::kAppendExisting:
        break;
    }
    int fd;
    do {
      fd = ::open(path.c_str(), flags, file_mode_);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return std::unexpected(io_error("opening", path, errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return std::unexpected(io_error("stat of", path, err));
    }
    return std::make_unique<PosixWritableFile>(path, fd, static_cast<uint64_t>(st.st_size));
  }

  Result<std::string> read_range(const fs::path& path, uint64_t offset, uint64_t length) override {
    int fd;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return std::unexpected(io_error("opening", path, errno));
    std::string out;
    out.resize(length);
    size_t done = 0;
    while (done < length) {
      ssize_t n = ::pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        return std::unexpected(io_error("reading", path, err));
      }
      if (n == 0) break;  // end of file
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    out.resize(done);
    return out;
  }

  Result<std::string> read_file(const fs::path& path) override {
    auto size = file_size(path);
    if (!size) return std::unexpected(size.error());
    return read_range(path, 0, *size);
  }

  Result<std::vector<std::string>> list_dir(const fs::path& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return std::unexpected(io_error("listing", dir, errno));
    std::vector<std::string> names;
    errno = 0;
    while (dirent* entry = ::readdir(d)) {
      std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return std::unexpected(io_error("listing", dir, err));
    return names;
  }

  Result<bool> exists(const fs::path& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT) return false;
    return std::unexpected(io_error("stat of", path, errno));
  }

  Result<uint64_t> file_size(const fs::path& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::unexpected(io_error("stat of", path, errno));
    return static_cast<uint64_t>(st.st_size);
  }

  Status rename(const fs::path& from, const fs::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return std::unexpected(io_error(fmt::format("renaming to {}:", to.string()), from, errno));
    }
    return ok();
  }

  Status unlink(const fs::path& path) override {
    if (::unlink(path.c_str()) != 0) return std::unexpected(io_error("deleting", path, errno));
    return ok();
  }

  Status fsync_dir(const fs::path& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return std::unexpected(io_error("opening directory", dir, errno));
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return std::unexpected(sync_error("fsync of directory", dir, err));
    return ok();
  }

  Status create_dirs(const fs::path& dir) override {
    if (dir.empty()) return ok();
    auto present = exists(dir);
    if (!present) return std::unexpected(present.error());
    if (*present) return ok();
    fs::path parent = dir.parent_path();
    if (parent.empty()) parent = ".";
    SKIPPR_TRY(create_dirs(dir.parent_path()));
    if (::mkdir(dir.c_str(), dir_mode_) != 0 && errno != EEXIST) {
      return std::unexpected(io_error("creating directory", dir, errno));
    }
    SKIPPR_TRY(fsync_dir(parent));
    return ok();
  }

  Status remove_dir(const fs::path& dir) override {
    if (::rmdir(dir.c_str()) != 0) return std::unexpected(io_error("removing directory", dir, errno));
    return ok();
  }

 private:
  mode_t file_mode_;
  mode_t dir_mode_;
};

}  // namespace

Env& default_env() {
  static PosixEnv env(0600, 0700);
  return env;
}

Env& shared_files_env() {
  static PosixEnv env(0644, 0755);
  return env;
}

namespace {

// The temporary file gets `mode` before anything is written to it (when given), so the file never has other bits.
Status write_atomically(Env& env, const fs::path& path, std::string_view content, std::optional<fs::perms> mode) {
  fs::path tmp = path;
  tmp += ".tmp";
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  auto written = [&]() -> Status {
    auto file = env.open_writable(tmp, OpenMode::kCreateOrTruncate);
    if (!file) return std::unexpected(file.error());
    if (mode) {
      std::error_code ec;
      fs::permissions(tmp, *mode, fs::perm_options::replace, ec);
      if (ec) {
        return fail(ErrorKind::kConfig,
                    fmt::format("cannot set the permissions of {}: {}", tmp.string(), ec.message()));
      }
    }
    SKIPPR_TRY((*file)->append(content));
    SKIPPR_TRY((*file)->sync());
    SKIPPR_TRY((*file)->close());
    return ok();
  }();
  if (!written) {
    (void)env.unlink(tmp);  // best effort: a stale .tmp is harmless and overwritten next time
    return written;
  }
  SKIPPR_TRY(env.rename(tmp, path));
  SKIPPR_TRY(env.fsync_dir(dir));
  return ok();
}

}  // namespace

Status write_file_atomically(Env& env, const fs::path& path, std::string_view content) {
  return write_atomically(env, path, content, std::nullopt);
}

Status replace_kept_file(const fs::path& path, std::string_view content) {
  std::error_code ec;
  // weakly_canonical follows every link, so a link to a link lands on the file itself.
  const fs::path target = fs::is_symlink(fs::symlink_status(path, ec)) ? fs::weakly_canonical(path, ec) : path;
  if (ec) return fail(ErrorKind::kConfig, fmt::format("cannot follow the link {}: {}", path.string(), ec.message()));
  const auto before = fs::status(target, ec);
  std::optional<fs::perms> mode;
  if (!ec && fs::exists(before)) mode = before.permissions();
  return write_atomically(shared_files_env(), target, content, mode);
}

}  // namespace skippr
