// The replace landings of the SQL sinks (DuckDB and Postgres share this SQL; each passes its quoting):
//  - replace_partition: every row carries the sync that read it (kSyncColumn). A batch's rows are added to the
//    table, then every row of another sync is deleted from the partitions that rows of this sync now hold. So the
//    first batch of a partition in a sync replaces it, later batches of the same sync add to it, and a partition the
//    sync did not read is untouched; the ledger row in the same transaction makes a replay change nothing.
//  - replace_table: a sync's rows go to a refresh table beside the target (the target's name + kRefreshSuffix,
//    made like the target, with kSyncColumn); the batch that ends the sync swaps its content into the target in the
//    same transaction as its ledger row. Readers see the old table whole until that commit, then the new one whole;
//    a run killed mid-sync goes on filling the same refresh table (its sync goes on, see core/sync_mark.h), and one
//    left by a sync that never ended is dropped by the next sync.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "sinks/kit/schema_evolution.h"

namespace skippr {

inline constexpr std::string_view kSyncColumn = "_skippr_sync";
inline constexpr std::string_view kRefreshSuffix = "__skippr_refresh";

struct ReplaceDialect {
  std::string (*quote_identifier)(std::string_view);
  std::string (*quote_literal)(std::string_view);
  // Compare partitions as jsonb arrays (Postgres hashes those; it cannot hash IS NOT DISTINCT FROM), else with
  // IS NOT DISTINCT FROM (DuckDB hashes it). Either way a NULL partition value is a partition of its own.
  bool jsonb_partition_keys = false;
};

// `batch` with kSyncColumn added, holding `sync_id` in every row.
Batch with_sync_column(const Batch& batch, std::string_view sync_id);

// kConfig naming `where` when the batch carries a field named kSyncColumn.
Status check_sync_field(const Batch& batch, std::string_view where);

// A row without a partition_by field is in the NULL partition, whichever batch it comes in: nullopt when the batch
// has every field (no copy), else the batch with each missing one added, all null, of the type of the table's
// column when `table_columns` (asked only then) has it, else a string.
Result<std::optional<Batch>> with_partition_fields(
    const Batch& batch, const std::vector<std::string>& partition_by,
    const std::function<Result<std::vector<TableColumn>>()>& table_columns, const ColumnRules& rules);

// Run after the batch's rows are in `table` (quoted, qualified): the rows of other syncs in the partitions that rows
// of `sync_id` hold go.
std::string replace_partitions_sql(const ReplaceDialect& d, const std::string& table,
                                   const std::vector<std::string>& partition_by, std::string_view sync_id);

// One row when the refresh table holds rows of another sync than `sync_id` (a sync that never ended).
std::string refresh_leftover_sql(const ReplaceDialect& d, const std::string& refresh, std::string_view sync_id);

// The target's columns the refresh table lacks get added, then the target's rows are replaced by the refresh
// table's (kSyncColumn left out) and the refresh table dropped. `refresh_columns` as the refresh table has them;
// `target_columns` empty: the target does not exist yet and is created.
std::vector<std::string> refresh_swap_sql(const ReplaceDialect& d, const std::string& target,
                                          const std::string& refresh, const std::vector<TableColumn>& refresh_columns,
                                          const std::vector<TableColumn>& target_columns, const ColumnRules& rules);

}  // namespace skippr
