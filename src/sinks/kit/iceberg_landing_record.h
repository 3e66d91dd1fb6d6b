// The record a sink of several Iceberg tables writes before it commits any of a group's tables (Iceberg commits one
// table at a time). It names, per table, the data files written and the batches they hold (prepared_landing.h); a run
// that finds it — the same process retrying, or one that starts with a lost DATA_DIR — commits in each table what the
// table does not hold yet, so a kill between two tables' commits never leaves a batch in some of its tables only.
// The newest record also carries the pipeline's tip (the newest batch of the group and the source position after it),
// which a run with a lost DATA_DIR resumes from, whichever of the tables that batch touched.
//
// Records live beside the tables, at .skippr-landings/<the tables' pattern>/<pipeline>/<epoch>-<seq>.json (the tip's
// batch, zero-padded: names sort in batch order). They are not signed: whoever can write there can write the tables'
// own metadata, and the files a record names must lie under its table's location.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "core/connector.h"
#include "formats/iceberg/prepared_landing.h"

namespace skippr {

struct IcebergLandingRecord {
  LedgerTip tip;
  std::vector<std::pair<std::string, PreparedLanding>> tables;  // table name, its landing; in commit order
};

// The folder of a pipeline's records, relative to the lake's root.
std::string landing_record_folder(std::string_view tables_pattern, std::string_view pipeline);
// The record's file name: after `tip`'s batch, so names sort as batches do.
std::string landing_record_name(const BatchId& tip);
std::string landing_record_json(const IcebergLandingRecord& record);
// kCorruption naming `where` for text that is not a record.
Result<IcebergLandingRecord> parse_landing_record(std::string_view text, std::string_view where);

}  // namespace skippr
