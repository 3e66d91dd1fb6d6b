// Data files no snapshot names: a landing killed between writing its files and its commit leaves them behind (one
// that fails removes its own, IcebergTableWriter::land). They are swept from the table's data/ folder, but only
// those that cannot be in flight: a file is removed when its name says which batch it was written for and the
// table's ledger holds that batch already (it landed in other files, and a writer that still holds it reloads,
// finds it applied and never names the file). Another writer's file of a batch not landed yet, and any file not named
// the way this writer names them (another engine's), stay.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

#include "core/batch.h"
#include "core/result.h"
#include "formats/iceberg/table_store.h"

namespace skippr {

// The batch a data file was written for, from its name "<pipeline>-<epoch>[-<lineage>]-<seq>-<random>.parquet"
// (object_encoding.h's batch_object_name plus the random part); nullopt for a name of another form.
std::optional<BatchId> batch_of_data_file(std::string_view file_name);

// Removes the files under data/ that no snapshot of `metadata` (the table's current metadata) names and whose batch
// its ledger holds. Returns how many it removed.
Result<int> sweep_orphan_data_files(TableStore& store, const nlohmann::json& metadata);

}  // namespace skippr
