#include "sources/file/remote_file_store.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace skippr {

std::optional<std::string> RemoteLocation::name_of(const std::string& key) const {
  if (key.ends_with('/') || !key.starts_with(prefix)) return std::nullopt;
  std::string name = key.substr(prefix.size());
  if (!glob_matches(pattern.segments, name)) return std::nullopt;
  return name;
}

Result<RemoteLocation> parse_remote_location(const std::string& url, std::string_view where) {
  const size_t scheme_end = url.find("://");
  const std::string scheme = url.substr(0, scheme_end);
  const std::string rest = url.substr(scheme_end + 3);
  const size_t slash = rest.find('/');
  RemoteLocation location;
  location.container = rest.substr(0, slash);
  const std::string keys = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (location.container.empty() || keys.empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: path '{}' must be {}://<bucket>/<key or pattern>, e.g. "
                            "{}://{}/in/*.jsonl.gz",
                            where, url, scheme, scheme, location.container.empty() ? "my-bucket" : location.container));
  }
  location.pattern = parse_glob(keys);
  location.prefix = location.pattern.base.empty() ? "" : location.pattern.base.generic_string() + "/";
  return location;
}

Result<std::filesystem::path> RemoteFileStore::fetch(const std::string& name, const FileIdentity& identity) {
  release();
  std::error_code ec;
  std::filesystem::create_directories(cache_dir_, ec);
  const std::filesystem::path path = cache_dir_ / "object.download";
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) {
    return fail(errno == ENOSPC ? ErrorKind::kDiskFull : ErrorKind::kFatalIo,
                fmt::format("{}: cannot write the download cache {}: {}", where_, path.string(), std::strerror(errno)));
  }
  cached_ = path;
  auto downloaded = download(name, identity, file);
  const bool written = std::fflush(file) == 0 && !std::ferror(file);
  const int write_errno = errno;
  std::fclose(file);
  // A local write that failed (a full disk) fails the transfer too: it is named as what it is, not as the network.
  if (!written) {
    return fail(
        write_errno == ENOSPC ? ErrorKind::kDiskFull : ErrorKind::kFatalIo,
        fmt::format("{}: writing the download cache {}: {}", where_, path.string(), std::strerror(write_errno)));
  }
  if (!downloaded) return fail(downloaded.error().kind, fmt::format("{}: {}", where_, downloaded.error().message));
  if (const auto size = std::filesystem::file_size(path, ec); ec || size != identity.size) {
    return fail(ErrorKind::kUnavailable, fmt::format("{}: the download of {} stopped short ({} of {} bytes)", where_,
                                                     display(name), ec ? 0 : size, identity.size));
  }
  return path;
}

void RemoteFileStore::release() {
  if (!cached_) return;
  std::error_code ec;
  std::filesystem::remove(*cached_, ec);
  cached_.reset();
}

}  // namespace skippr
