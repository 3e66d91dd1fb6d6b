// merge_by_key in DuckDB: the checks and SQL that move a staged batch into the target, with the same semantics as
// the Postgres sink. Per key only the batch's newest change counts; an upsert never overwrites a row with a newer
// order token nor resurrects a key whose tombstone is newer; a delete removes an older row and records (or advances)
// the key's tombstone in <table>__skippr_tombstones.
//
// Why MERGE INTO on a table without a unique index: DuckDB's ART indexes check constraints over-eagerly within one
// transaction and slow every append down, while a hash join of the (small) batch against the target's key columns
// needs no index. Duplicate keys cannot appear because every write of the table goes through one transaction at a
// time (the pipeline's lock plus DuckDB's file lock) and inserts only keys the target lacks.
#pragma once

#include <string>
#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "sinks/kit/merge_sql.h"
#include "sinks/kit/schema_evolution.h"

namespace skippr {

// The staging table: a TEMP table in the sink's transaction, dropped before COMMIT.
inline constexpr std::string_view kDuckDbStageTable = "_skippr_stage";

// The staging table's columns: the batch's fields, each with the target column's type (so the appender copies them
// exactly as append does) or, for the change fields, the batch's own type; then the row number.
std::vector<TableColumn> stage_columns(const Batch& batch, const std::vector<TableColumn>& target_columns);
std::string create_stage_sql(const std::vector<TableColumn>& stage);

struct MergeTarget {
  std::string table;
  std::vector<std::string> primary_key;
  std::vector<TableColumn> columns;  // after schema evolution, with the order column
};

// The statements, in order, that apply the staged batch and drop the staging table.
std::vector<std::string> merge_statements(const Batch& batch, const BatchId& id, const MergeTarget& target,
                                          bool with_deletes);

}  // namespace skippr
