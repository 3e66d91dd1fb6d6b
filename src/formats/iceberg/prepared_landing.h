// A landing of an Iceberg table between its two steps: the data files written (named by no snapshot yet) and what
// their commit needs, the batches they hold and the schema and partition spec they were written under. The table
// writer commits one as a snapshot (IcebergTableWriter::commit); a sink that lands one batch in several tables writes
// all of theirs down first (as JSON, below), so whoever finds that record commits what it lists — the same files, not
// files written again from rows a lost DATA_DIR no longer has.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "formats/iceberg/iceberg_schema.h"
#include "formats/iceberg/manifests.h"

namespace skippr {

struct PreparedBatch {
  BatchId id;
  Position position_after;
  std::vector<DataFile> files;  // none for a batch whose records were all dead-lettered
};

struct PreparedLanding {
  std::vector<PreparedBatch> batches;  // those the table did not hold when the files were written, in order
  IcebergSchema schema;                // the files' field ids are this schema's
  int last_column_id = 0;              // the highest field id the schema has given out
  nlohmann::json spec;                 // the partition spec the files' partition values follow (PartitionSpec JSON)
  bool empty() const { return batches.empty(); }
};

nlohmann::json to_json(const PreparedLanding& landing);
// kCorruption naming `where` for JSON that is not a landing to_json wrote.
Result<PreparedLanding> prepared_landing_from_json(const nlohmann::json& json, std::string_view where);

}  // namespace skippr
