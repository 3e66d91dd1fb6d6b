#include "formats/iceberg/table_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace skippr {
namespace {

Error io_error(std::string_view what, const std::filesystem::path& path) {
  const int err = errno;
  return Error{err == ENOSPC ? ErrorKind::kDiskFull : ErrorKind::kUnavailable,
               fmt::format("{} {}: {}", what, path.string(), std::strerror(err))};
}

Status fsync_path(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return std::unexpected(io_error("opening", path));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return fail(ErrorKind::kFatalIo, fmt::format("fsync {}: {}", path.string(), std::strerror(errno)));
  return ok();
}

Result<std::string> read_whole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(io_error("reading", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class FolderTableStore final : public TableStore {
 public:
  explicit FolderTableStore(std::filesystem::path root) : root_(std::move(root)) {}

  std::string uri(std::string_view relative) const override {
    return "file://" + (root_ / std::string(relative)).string();
  }
  std::string where() const override { return "folder " + root_.string(); }

  Result<std::optional<std::string>> read(const std::string& relative) override {
    std::error_code ec;
    if (!std::filesystem::exists(root_ / relative, ec)) return std::optional<std::string>();
    auto text = read_whole(root_ / relative);
    if (!text) return std::unexpected(text.error());
    return std::optional<std::string>(std::move(*text));
  }

  Status write(const std::string& relative, std::string_view bytes) override {
    auto temp = write_temporary(relative, bytes);
    if (!temp) return std::unexpected(temp.error());
    const auto target = root_ / relative;
    if (::rename(temp->c_str(), target.c_str()) != 0) return std::unexpected(io_error("renaming into", target));
    return fsync_path(target.parent_path(), O_RDONLY | O_DIRECTORY);
  }

  // A file of the same file system is synced and renamed into place: no copy of a data file's bytes.
  Status write_file(const std::string& relative, const std::filesystem::path& from) override {
    const auto target = root_ / relative;
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    SKIPPR_TRY(fsync_path(from, O_RDONLY));
    if (::rename(from.c_str(), target.c_str()) != 0) {
      if (errno != EXDEV) return std::unexpected(io_error("renaming into", target));
      return TableStore::write_file(relative, from);  // another file system: copy
    }
    return fsync_path(target.parent_path(), O_RDONLY | O_DIRECTORY);
  }

  Result<std::vector<std::string>> list(const std::string& folder) override {
    std::vector<std::string> out;
    std::error_code ec;
    if (!std::filesystem::exists(root_ / folder, ec)) return out;
    std::filesystem::recursive_directory_iterator it(root_ / folder, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec) && !it->path().filename().string().starts_with(".")) {
        out.push_back(it->path().lexically_relative(root_).generic_string());
      }
    }
    if (ec)
      return fail(ErrorKind::kUnavailable, fmt::format("listing {}: {}", (root_ / folder).string(), ec.message()));
    return out;
  }

  Status remove(const std::string& relative) override {
    std::error_code ec;
    std::filesystem::remove(root_ / relative, ec);
    if (ec)
      return fail(ErrorKind::kUnavailable, fmt::format("removing {}: {}", (root_ / relative).string(), ec.message()));
    return ok();
  }

  Result<CreateOutcome> create(const std::string& relative, std::string_view bytes) override {
    auto temp = write_temporary(relative, bytes);
    if (!temp) return std::unexpected(temp.error());
    const auto target = root_ / relative;
    // link(2) makes the complete file visible under its name only if the name is free: the atomic
    // create-if-absent a rename (which replaces) cannot give.
    const int rc = ::link(temp->c_str(), target.c_str());
    const int err = errno;
    ::unlink(temp->c_str());
    if (rc != 0 && err == EEXIST) return CreateOutcome::kAlreadyExists;
    if (rc != 0) {
      errno = err;
      return std::unexpected(io_error("creating", target));
    }
    SKIPPR_TRY(fsync_path(target.parent_path(), O_RDONLY | O_DIRECTORY));
    return CreateOutcome::kCreated;
  }

 private:
  // The bytes in a synced temporary file beside `relative` (hidden by its leading dot from anything listing).
  Result<std::filesystem::path> write_temporary(const std::string& relative, std::string_view bytes) {
    const auto target = root_ / relative;
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec)
      return fail(ErrorKind::kUnavailable, fmt::format("creating {}: {}", target.parent_path().string(), ec.message()));
    unsigned char random[8];
    RAND_bytes(random, sizeof random);
    uint64_t suffix = 0;
    std::memcpy(&suffix, random, sizeof suffix);
    const auto temp = target.parent_path() / fmt::format(".{}.{:016x}.tmp", target.filename().string(), suffix);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return std::unexpected(io_error("creating", temp));
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Error e = io_error("writing", temp);
        ::close(fd);
        ::unlink(temp.c_str());
        return std::unexpected(e);
      }
      done += static_cast<size_t>(n);
    }
    if (::fdatasync(fd) != 0) {
      ::close(fd);
      return fail(ErrorKind::kFatalIo, fmt::format("fdatasync {}: {}", temp.string(), std::strerror(errno)));
    }
    ::close(fd);
    return temp;
  }

  std::filesystem::path root_;
};

class S3TableStore final : public TableStore {
 public:
  S3TableStore(S3Client client, std::string bucket, std::string prefix)
      : client_(std::move(client)), bucket_(std::move(bucket)), prefix_(std::move(prefix)) {}

  std::string uri(std::string_view relative) const override {
    return fmt::format("s3://{}/{}", bucket_, key(relative));
  }
  std::string where() const override { return fmt::format("s3://{}/{}", bucket_, prefix_); }

  Result<std::optional<std::string>> read(const std::string& relative) override {
    return client_.get_object_if_exists(bucket_, key(relative));
  }
  Status write(const std::string& relative, std::string_view bytes) override {
    return client_.put_object(bucket_, key(relative), bytes, content_type(relative));
  }
  Result<std::vector<std::string>> list(const std::string& folder) override {
    auto objects = client_.list_objects(bucket_, key(folder) + "/");
    if (!objects) return std::unexpected(objects.error());
    const std::string root = key("");
    std::vector<std::string> out;
    for (const auto& object : *objects) {
      if (object.key.starts_with(root)) out.push_back(object.key.substr(root.size()));
    }
    return out;
  }
  Status remove(const std::string& relative) override { return client_.delete_object(bucket_, key(relative)); }
  Result<CreateOutcome> create(const std::string& relative, std::string_view bytes) override {
    auto put = client_.put_object_if_absent(bucket_, key(relative), bytes, content_type(relative));
    if (!put) return std::unexpected(put.error());
    return *put == PutOutcome::kCreated ? CreateOutcome::kCreated : CreateOutcome::kAlreadyExists;
  }

 private:
  std::string key(std::string_view relative) const {
    return prefix_.empty() ? std::string(relative) : prefix_ + "/" + std::string(relative);
  }
  static const char* content_type(std::string_view relative) {
    if (relative.ends_with(".json")) return "application/json";
    if (relative.ends_with(".text")) return "text/plain";
    return "application/octet-stream";
  }

  S3Client client_;
  std::string bucket_;
  std::string prefix_;
};

}  // namespace

Status TableStore::write_file(const std::string& relative, const std::filesystem::path& from) {
  auto bytes = read_whole(from);
  if (!bytes) return std::unexpected(bytes.error());
  SKIPPR_TRY(write(relative, *bytes));
  std::error_code ec;
  std::filesystem::remove(from, ec);
  return ok();
}

Result<std::unique_ptr<TableStore>> folder_table_store(const std::filesystem::path& root) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec)
    return fail(ErrorKind::kConfig, fmt::format("cannot create the table folder {}: {}", root.string(), ec.message()));
  return std::unique_ptr<TableStore>(std::make_unique<FolderTableStore>(std::filesystem::absolute(root)));
}

std::unique_ptr<TableStore> s3_table_store(S3Client client, std::string bucket, std::string prefix) {
  return std::make_unique<S3TableStore>(std::move(client), std::move(bucket), std::move(prefix));
}

}  // namespace skippr
