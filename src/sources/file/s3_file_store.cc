#include "sources/file/s3_file_store.h"

#include <fmt/format.h>

#include <optional>

#include "clients/aws/s3_client.h"
#include "sources/file/remote_file_store.h"

namespace skippr {
namespace {

class S3FileStore final : public RemoteFileStore {
 public:
  S3FileStore(RemoteLocation location, AwsOptions aws, std::filesystem::path cache_dir, std::string where)
      : RemoteFileStore(std::move(cache_dir), std::move(where)),
        bucket_(location.container),
        location_(std::move(location)),
        aws_(std::move(aws)) {}

  Status open() override {
    if (client_) return ok();
    auto service = resolve_aws_service(aws_, "s3", where());
    if (!service) return std::unexpected(service.error());
    S3Client client(std::move(*service));
    if (auto checked = client.check_bucket(bucket_); !checked) {
      return fail(checked.error().kind, fmt::format("{}: {}", where(), checked.error().message));
    }
    client_.emplace(std::move(client));
    return ok();
  }

  Result<std::vector<StoredFile>> list() override {
    SKIPPR_TRY(open());
    auto objects = client_->list_objects(bucket_, location_.prefix);
    if (!objects) return fail(objects.error().kind, fmt::format("{}: {}", where(), objects.error().message));
    std::vector<StoredFile> out;
    for (auto& object : *objects) {
      if (auto name = location_.name_of(object.key)) {
        out.push_back({std::move(*name), FileIdentity{object.size, 0, std::move(object.etag)}});
      }
    }
    return out;
  }

  Result<std::optional<FileIdentity>> identity(const std::string& name) override {
    SKIPPR_TRY(open());
    auto object = client_->head_object(bucket_, location_.prefix + name);
    if (!object) return fail(object.error().kind, fmt::format("{}: {}", where(), object.error().message));
    if (!*object) return std::optional<FileIdentity>();
    return std::optional<FileIdentity>(FileIdentity{(*object)->size, 0, std::move((*object)->etag)});
  }

  std::string display(const std::string& name) const override {
    return fmt::format("s3://{}/{}{}", bucket_, location_.prefix, name);
  }

 private:
  Status download(const std::string& name, const FileIdentity& identity, std::FILE* file) override {
    SKIPPR_TRY(open());
    return client_->download_object(bucket_, location_.prefix + name, identity.version, file);
  }

  std::string bucket_;
  RemoteLocation location_;
  AwsOptions aws_;
  std::optional<S3Client> client_;
};

}  // namespace

Result<std::unique_ptr<FileStore>> s3_file_store(const std::string& url, AwsOptions aws,
                                                 std::filesystem::path cache_dir, std::string where) {
  auto location = parse_remote_location(url, where);
  if (!location) return std::unexpected(location.error());
  return std::make_unique<S3FileStore>(std::move(*location), std::move(aws), std::move(cache_dir), std::move(where));
}

}  // namespace skippr
