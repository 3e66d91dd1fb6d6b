#include "sources/file/gcs_file_store.h"

#include <fmt/format.h>

#include <optional>

#include "clients/gcs/gcs_client.h"
#include "sources/file/remote_file_store.h"

namespace skippr {
namespace {

class GcsFileStore final : public RemoteFileStore {
 public:
  GcsFileStore(RemoteLocation location, GcsOptions gcs, std::filesystem::path cache_dir, std::string where)
      : RemoteFileStore(std::move(cache_dir), std::move(where)), location_(std::move(location)), gcs_(std::move(gcs)) {}

  Status open() override {
    if (client_) return ok();
    auto account = load_google_service_account(gcs_, where());
    if (!account) return std::unexpected(account.error());
    auto endpoint = resolve_gcs_endpoint(gcs_, where());
    if (!endpoint) return std::unexpected(endpoint.error());
    GcsClient client(std::move(*endpoint), std::move(*account));
    if (auto checked = client.check_bucket(location_.container); !checked) {
      return fail(checked.error().kind, fmt::format("{}: {}", where(), checked.error().message));
    }
    client_.emplace(std::move(client));
    return ok();
  }

  Result<std::vector<StoredFile>> list() override {
    SKIPPR_TRY(open());
    // The service lists in name order (the source's order), one page after another.
    auto objects = client_->list_objects(location_.container, location_.prefix);
    if (!objects) return fail(objects.error().kind, fmt::format("{}: {}", where(), objects.error().message));
    std::vector<StoredFile> out;
    for (auto& object : *objects) {
      if (auto name = location_.name_of(object.name)) {
        out.push_back({std::move(*name), FileIdentity{object.size, 0, std::move(object.generation)}});
      }
    }
    return out;
  }

  Result<std::optional<FileIdentity>> identity(const std::string& name) override {
    SKIPPR_TRY(open());
    auto object = client_->get_object_metadata(location_.container, location_.prefix + name);
    if (!object) return fail(object.error().kind, fmt::format("{}: {}", where(), object.error().message));
    if (!*object) return std::optional<FileIdentity>();
    return std::optional<FileIdentity>(FileIdentity{(*object)->size, 0, std::move((*object)->generation)});
  }

  std::string display(const std::string& name) const override {
    return fmt::format("gs://{}/{}{}", location_.container, location_.prefix, name);
  }

 private:
  // A generation names content that never changes: ifGenerationMatch pins the download to the one listed.
  Status download(const std::string& name, const FileIdentity& identity, std::FILE* file) override {
    SKIPPR_TRY(open());
    return client_->download_object(location_.container, location_.prefix + name, identity.version, file);
  }

  RemoteLocation location_;
  GcsOptions gcs_;
  std::optional<GcsClient> client_;
};

}  // namespace

Result<std::unique_ptr<FileStore>> gcs_file_store(const std::string& url, GcsOptions gcs,
                                                  std::filesystem::path cache_dir, std::string where) {
  auto location = parse_remote_location(url, where);
  if (!location) return std::unexpected(location.error());
  return std::make_unique<GcsFileStore>(std::move(*location), std::move(gcs), std::move(cache_dir), std::move(where));
}

}  // namespace skippr
