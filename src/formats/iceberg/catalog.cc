#include "formats/iceberg/catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/failpoint.h"

namespace skippr {
namespace {

std::string version_path(int64_t n) { return fmt::format("metadata/v{}.metadata.json", n); }

class StorageCatalog final : public IcebergCatalog {
 public:
  explicit StorageCatalog(TableStore& store) : store_(store) {}

  Result<std::optional<TableVersion>> load() override {
    auto hint = store_.read("metadata/version-hint.text");
    if (!hint) return std::unexpected(hint.error());
    int64_t n = 0;
    if (*hint) {
      try {
        n = std::stoll(**hint);
      } catch (const std::exception&) {
        n = 0;  // unreadable: walk from the first version
      }
    }
    std::optional<std::string> current;
    int64_t at = 0;
    // The hinted version, then each next one that exists.
    for (int64_t probe = std::max<int64_t>(n, 1);; ++probe) {
      auto text = store_.read(version_path(probe));
      if (!text) return std::unexpected(text.error());
      if (!*text) {
        if (probe == n && n > 1) {
          return fail(ErrorKind::kCorruption,
                      fmt::format("{}: the version hint names v{}, which is missing", store_.where(), n));
        }
        break;
      }
      current = std::move(*text);
      at = probe;
    }
    if (!current) return std::optional<TableVersion>();
    auto metadata = nlohmann::json::parse(*current, nullptr, false);
    if (!metadata.is_object()) {
      return fail(ErrorKind::kCorruption, fmt::format("{}: {} is not JSON", store_.where(), version_path(at)));
    }
    if (at != n) {
      // The hint lags: a run died between a commit and its hint. Readers that trust the hint (icebird, DuckDB's
      // iceberg_scan) would see the table a version behind, and when that commit was the last one (the run after
      // the crash finds its batches already applied) no later commit would move it: the writer that finds it moves it.
      spdlog::info("{}: the version hint names v{}, the newest version is v{}; the hint now names it", store_.where(),
                   n, at);
      write_hint(at);
    }
    return std::optional<TableVersion>(TableVersion{std::move(metadata), store_.uri(version_path(at)), at, ""});
  }

  Result<CommitResult> commit(const std::optional<TableVersion>& base, const nlohmann::json& metadata) override {
    const int64_t next = base ? base->version + 1 : 1;
    auto created = store_.create(version_path(next), metadata.dump(2));
    if (!created) return std::unexpected(created.error());
    if (*created == CreateOutcome::kAlreadyExists) return CommitResult::kConflict;
    failpoint::hit(failpoint::kLakeBeforeVersionHint);
    // The commit is made; the hint is what most readers open.
    write_hint(next);
    return CommitResult::kCommitted;
  }

  std::string where() const override { return store_.where(); }

 private:
  // Best effort: a hint that could not be written lags, and the next load() moves it.
  void write_hint(int64_t version) {
    if (auto hinted = store_.write("metadata/version-hint.text", std::to_string(version)); !hinted) {
      spdlog::warn("{}: committed v{}, but the version hint was not updated: {}", store_.where(), version,
                   hinted.error().message);
    }
  }

  TableStore& store_;
};

}  // namespace

std::unique_ptr<IcebergCatalog> storage_catalog(TableStore& store) { return std::make_unique<StorageCatalog>(store); }

}  // namespace skippr
