// The File source's local store: a folder on this machine, read in place.
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "sources/file/file_store.h"

namespace skippr {
namespace {

class LocalFileStore final : public FileStore {
 public:
  explicit LocalFileStore(GlobPattern pattern) : pattern_(std::move(pattern)) {}

  Status open() override { return ok(); }

  Result<std::vector<StoredFile>> list() override {
    auto files = expand_glob(pattern_);
    if (!files) return std::unexpected(files.error());
    std::vector<StoredFile> out;
    for (const auto& path : *files) {
      auto identity = identity_of(path);
      if (!identity) return std::unexpected(identity.error());
      if (*identity) out.push_back({path.lexically_relative(pattern_.base).generic_string(), **identity});
    }
    return out;
  }

  Result<std::optional<FileIdentity>> identity(const std::string& name) override {
    return identity_of(pattern_.base / name);
  }

  Result<std::filesystem::path> fetch(const std::string& name, const FileIdentity&) override {
    return pattern_.base / name;
  }

  std::string display(const std::string& name) const override { return (pattern_.base / name).string(); }

 private:
  static Result<std::optional<FileIdentity>> identity_of(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return std::optional<FileIdentity>();
      return fail(ErrorKind::kBadInput,
                  fmt::format("{} can no longer be read: {}", path.string(), std::strerror(errno)));
    }
    return std::optional<FileIdentity>(FileIdentity{
        static_cast<uint64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
  }

  GlobPattern pattern_;
};

}  // namespace

std::unique_ptr<FileStore> local_file_store(GlobPattern pattern) {
  return std::make_unique<LocalFileStore>(std::move(pattern));
}

}  // namespace skippr
