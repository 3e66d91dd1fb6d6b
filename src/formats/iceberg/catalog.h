// Which metadata file is an Iceberg table's current version, and the conditional commit that moves it. The seam
// between the table writer and a catalog: the storage catalog below keeps versions as metadata/v<N>.metadata.json
// beside a version hint (the layout of Iceberg's file-system tables), AthenaIceberg's keeps them in AWS Glue.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "formats/iceberg/table_store.h"

namespace skippr {

struct TableVersion {
  nlohmann::json metadata;
  std::string location;  // the metadata file's full location
  int64_t version = 0;   // the catalog's counter (storage catalog: N of vN.metadata.json)
  std::string token;     // what the catalog's conditional commit checks (Glue: the table's VersionId)
};

enum class CommitResult { kCommitted, kConflict };

class IcebergCatalog {
 public:
  virtual ~IcebergCatalog() = default;
  // The current version; nullopt when the table does not exist yet.
  virtual Result<std::optional<TableVersion>> load() = 0;
  // Makes `metadata` the version after `base` (nullopt: creates the table) if `base` is still the current one;
  // kConflict when another writer committed first (reload and try again on the new base). kUnknownOutcome when the
  // commit may have happened: a retry reloads and finds out from the ledger in the snapshot summary.
  virtual Result<CommitResult> commit(const std::optional<TableVersion>& base, const nlohmann::json& metadata) = 0;
  virtual std::string where() const = 0;
};

// metadata/v<N>.metadata.json, created only if absent (the store's create), then metadata/version-hint.text. The
// hint may lag a version (a crash between the two): load() reads the hint, then moves on while a next version
// exists, so it is a shortcut and never the truth for the writer. Most readers open the hinted version alone, so
// load() also rewrites a hint it finds lagging: the run after such a crash may have nothing more to commit.
std::unique_ptr<IcebergCatalog> storage_catalog(TableStore& store);

}  // namespace skippr
