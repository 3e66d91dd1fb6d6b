#include "sources/file/s3_file_store.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "clients/aws/s3_client.h"

namespace skippr {
namespace {

class S3FileStore final : public FileStore {
 public:
  S3FileStore(std::string bucket, GlobPattern pattern, AwsOptions aws, std::filesystem::path cache_dir,
              std::string where)
      : bucket_(std::move(bucket)),
        pattern_(std::move(pattern)),
        prefix_(pattern_.base.empty() ? "" : pattern_.base.generic_string() + "/"),
        aws_(std::move(aws)),
        cache_dir_(std::move(cache_dir)),
        where_(std::move(where)) {}

  ~S3FileStore() override { release(); }

  Status open() override {
    if (client_) return ok();
    auto service = resolve_aws_service(aws_, "s3", where_);
    if (!service) return std::unexpected(service.error());
    S3Client client(std::move(*service));
    if (auto checked = client.check_bucket(bucket_); !checked) {
      return fail(checked.error().kind, fmt::format("{}: {}", where_, checked.error().message));
    }
    client_.emplace(std::move(client));
    return ok();
  }

  Result<std::vector<StoredFile>> list() override {
    SKIPPR_TRY(open());
    auto objects = client_->list_objects(bucket_, prefix_);
    if (!objects) return fail(objects.error().kind, fmt::format("{}: {}", where_, objects.error().message));
    std::vector<StoredFile> out;
    for (auto& object : *objects) {
      if (object.key.ends_with('/')) continue;  // a "folder" marker, not data
      std::string name = object.key.substr(prefix_.size());
      if (!glob_matches(pattern_.segments, name)) continue;
      out.push_back({std::move(name), FileIdentity{object.size, 0, std::move(object.etag)}});
    }
    return out;
  }

  Result<std::optional<FileIdentity>> identity(const std::string& name) override {
    SKIPPR_TRY(open());
    auto object = client_->head_object(bucket_, prefix_ + name);
    if (!object) return fail(object.error().kind, fmt::format("{}: {}", where_, object.error().message));
    if (!*object) return std::optional<FileIdentity>();
    return std::optional<FileIdentity>(FileIdentity{(*object)->size, 0, std::move((*object)->etag)});
  }

  Result<std::filesystem::path> fetch(const std::string& name, const FileIdentity& identity) override {
    SKIPPR_TRY(open());
    release();
    std::error_code ec;
    std::filesystem::create_directories(cache_dir_, ec);
    const std::filesystem::path path = cache_dir_ / "object.download";
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file) {
      return fail(ErrorKind::kFatalIo, fmt::format("{}: cannot write the download cache {}: {}", where_, path.string(),
                                                   std::strerror(errno)));
    }
    auto downloaded = client_->download_object(bucket_, prefix_ + name, identity.version, file);
    const bool written = std::fflush(file) == 0 && !std::ferror(file);
    const int write_errno = errno;
    std::fclose(file);
    cached_ = path;
    if (!downloaded) {
      return fail(downloaded.error().kind, fmt::format("{}: {}", where_, downloaded.error().message));
    }
    if (!written) {
      return fail(
          write_errno == ENOSPC ? ErrorKind::kDiskFull : ErrorKind::kFatalIo,
          fmt::format("{}: writing the download cache {}: {}", where_, path.string(), std::strerror(write_errno)));
    }
    if (const auto size = std::filesystem::file_size(path, ec); ec || size != identity.size) {
      return fail(ErrorKind::kUnavailable, fmt::format("{}: the download of {} stopped short ({} of {} bytes)", where_,
                                                       display(name), ec ? 0 : size, identity.size));
    }
    return path;
  }

  void release() override {
    if (!cached_) return;
    std::error_code ec;
    std::filesystem::remove(*cached_, ec);
    cached_.reset();
  }

  std::string display(const std::string& name) const override {
    return fmt::format("s3://{}/{}{}", bucket_, prefix_, name);
  }

  bool versions_are_content() const override { return true; }

 private:
  std::string bucket_;
  GlobPattern pattern_;
  std::string prefix_;  // the pattern's fixed folder, with its '/'
  AwsOptions aws_;
  std::filesystem::path cache_dir_;
  std::string where_;
  std::optional<S3Client> client_;
  std::optional<std::filesystem::path> cached_;
};

}  // namespace

bool is_s3_url(std::string_view path) { return path.starts_with("s3://"); }

Result<std::unique_ptr<FileStore>> s3_file_store(const std::string& url, AwsOptions aws,
                                                 std::filesystem::path cache_dir, std::string where) {
  const std::string rest = url.substr(5);
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  const std::string keys = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (bucket.empty() || keys.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: path '{}' must be s3://<bucket>/<key or pattern>, e.g. "
                                                "s3://{}/in/*.jsonl.gz",
                                                where, url, bucket.empty() ? "my-bucket" : bucket));
  }
  return std::make_unique<S3FileStore>(bucket, parse_glob(keys), std::move(aws), std::move(cache_dir),
                                       std::move(where));
}

}  // namespace skippr
