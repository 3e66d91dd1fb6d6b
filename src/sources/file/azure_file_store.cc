#include "sources/file/azure_file_store.h"

#include <fmt/format.h>

#include <optional>

#include "clients/azure/blob_client.h"
#include "sources/file/remote_file_store.h"

namespace skippr {
namespace {

class AzureFileStore final : public RemoteFileStore {
 public:
  AzureFileStore(RemoteLocation location, AzureOptions azure, std::filesystem::path cache_dir, std::string where)
      : RemoteFileStore(std::move(cache_dir), std::move(where)),
        location_(std::move(location)),
        azure_(std::move(azure)) {}

  Status open() override {
    if (client_) return ok();
    auto account = resolve_azure_account(azure_, where());
    if (!account) return std::unexpected(account.error());
    BlobClient client(std::move(*account));
    if (auto checked = client.check_container(location_.container); !checked) {
      return fail(checked.error().kind, fmt::format("{}: {}", where(), checked.error().message));
    }
    client_.emplace(std::move(client));
    return ok();
  }

  Result<std::vector<StoredFile>> list() override {
    SKIPPR_TRY(open());
    auto blobs = client_->list_blob_items(location_.container, location_.prefix);
    if (!blobs) return fail(blobs.error().kind, fmt::format("{}: {}", where(), blobs.error().message));
    std::vector<StoredFile> out;
    for (auto& blob : *blobs) {
      if (auto name = location_.name_of(blob.name)) {
        out.push_back({std::move(*name), FileIdentity{blob.size, 0, std::move(blob.etag)}});
      }
    }
    return out;
  }

  Result<std::optional<FileIdentity>> identity(const std::string& name) override {
    SKIPPR_TRY(open());
    auto blob = client_->blob_properties(location_.container, location_.prefix + name);
    if (!blob) return fail(blob.error().kind, fmt::format("{}: {}", where(), blob.error().message));
    if (!*blob) return std::optional<FileIdentity>();
    return std::optional<FileIdentity>(FileIdentity{(*blob)->size, 0, std::move((*blob)->etag)});
  }

  std::string display(const std::string& name) const override {
    return fmt::format("az://{}/{}{}", location_.container, location_.prefix, name);
  }

 private:
  Status download(const std::string& name, const FileIdentity& identity, std::FILE* file) override {
    SKIPPR_TRY(open());
    return client_->download_blob(location_.container, location_.prefix + name, identity.version, file);
  }

  RemoteLocation location_;
  AzureOptions azure_;
  std::optional<BlobClient> client_;
};

}  // namespace

Result<std::unique_ptr<FileStore>> azure_file_store(const std::string& url, AzureOptions azure,
                                                    std::filesystem::path cache_dir, std::string where) {
  auto location = parse_remote_location(url, where);
  if (!location) return std::unexpected(location.error());
  return std::make_unique<AzureFileStore>(std::move(*location), std::move(azure), std::move(cache_dir),
                                          std::move(where));
}

}  // namespace skippr
