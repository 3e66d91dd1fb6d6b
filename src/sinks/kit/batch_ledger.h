// The ledger of the exactly-once SQL sinks: one row per landed batch, written in the same transaction as its rows,
// so "already applied?" is answered by the destination itself. Rows are scoped to the target they were written to
// (a batch of table a never answers for table b) and keep the batch's source position, which lets a sync with a
// lost DATA_DIR resume where the destination stands (Sink::ledger_tip). DuckDB and Postgres share this SQL; each
// passes its own quoting and types.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/connector.h"
#include "core/failpoint.h"

namespace skippr {

inline constexpr std::string_view kLedgerTable = "_skippr_batches";

struct LedgerDialect {
  std::string schema_prefix;     // "" or the quoted schema and a dot, e.g. "raw".
  std::string schema_predicate;  // an information_schema.columns condition naming the ledger's schema
  std::string (*quote_literal)(std::string_view);
  const char* text_type;  // VARCHAR / text
  const char* uint_type;  // UBIGINT / bigint
  // The engine's quoting of a name (the ledger's and its "rows" column); null: SQL's double quotes. BigQuery, where
  // double quotes make a string, passes backticks.
  std::string (*quote_identifier)(std::string_view) = nullptr;
  // BigQuery's LIKE takes no ESCAPE clause: a backslash is its escape character.
  bool like_escapes_with_backslash = false;
};

enum class LedgerFormat { kAbsent, kFirst, kCurrent };
// The ledger's column names (one per row), and what they say of its format.
std::string ledger_columns_sql(const LedgerDialect& d);
LedgerFormat ledger_format(const std::vector<std::string>& columns);

// CREATE TABLE IF NOT EXISTS with the current columns: (target_table, batch_id) is the key.
std::string ledger_create_sql(const LedgerDialect& d);
// Rebuilds a ledger of the first format (batch_id alone as the key, no lineage or position) in the current one,
// keeping its rows; run inside one transaction, after checking that `position_after` is missing.
std::vector<std::string> ledger_migrate_sql(const LedgerDialect& d);
// Rows (one at most) when a batch of `lineage` of `pipeline` has landed in `target`.
std::string ledger_has_lineage_sql(const LedgerDialect& d, std::string_view target, std::string_view pipeline,
                                   std::string_view lineage);
// The same in any table whose ledger name matches `target_like` (ledger_tip_any_table_sql).
std::string ledger_has_lineage_any_table_sql(const LedgerDialect& d, std::string_view target_like,
                                             std::string_view pipeline, std::string_view lineage);
// One row when `id` has landed in `target`.
std::string ledger_has_sql(const LedgerDialect& d, std::string_view target, const BatchId& id);
std::string ledger_insert_sql(const LedgerDialect& d, std::string_view target, const BatchId& id, uint64_t rows,
                              const Position& position_after);
// The same row as INSERT ... SELECT ... WHERE NOT EXISTS (the ledger row of `id`): for an engine whose request may run
// twice (a warehouse API), so a second run adds nothing; `also` (when given) is ANDed to the condition.
std::string ledger_insert_unless_landed_sql(const LedgerDialect& d, std::string_view target, const BatchId& id,
                                            uint64_t rows, const Position& position_after, std::string_view also = {});
// Columns batch_id, position_after (NULL when none was kept), max_epoch (as text) of the newest batch of `pipeline`
// in `target`; no row when there is none.
std::string ledger_tip_sql(const LedgerDialect& d, std::string_view target, std::string_view pipeline);
// The same over every table the pipeline lands in, those whose ledger name matches `target_like` (a LIKE pattern with
// kLikeEscape as its escape: StreamTables::target_like): the tip of a pipeline of several streams, whose batches land
// all their streams' tables in one transaction (so the newest batch in any of them is the newest of all). A pipeline of
// the same name landing elsewhere in the database (another team's config, another table pattern) is not looked at.
std::string ledger_tip_any_table_sql(const LedgerDialect& d, std::string_view target_like, std::string_view pipeline);
// The tip that query's answer (rows of text or null) says; nullopt when it has no row.
std::optional<LedgerTip> ledger_tip_of(const std::vector<std::vector<std::optional<std::string>>>& rows);

// The body of a coalesced landing (Sink::write_group), inside the transaction the caller opened and commits: each
// batch the ledger holds already (`has(item)`, in the item's target table) is skipped as kAlreadyApplied, every other
// goes through `land(item)`, which writes its rows and its ledger row and returns how many rows it rejected. The first
// failure ends the group (the caller's transaction then rolls back all of it).
template <class Has, class Land>
Result<std::vector<BatchLanded>> land_new_batches(std::span<const BatchToLand> group, Has&& has, Land&& land) {
  std::vector<BatchLanded> landed;
  landed.reserve(group.size());
  bool wrote_one = false;
  for (const auto& item : group) {
    if (wrote_one) failpoint::hit(failpoint::kSinkInGroup);
    Result<bool> held = has(item);
    if (!held) return std::unexpected(held.error());
    if (*held) {
      landed.push_back({WriteOutcome::kAlreadyApplied, 0});
      continue;
    }
    Result<uint64_t> rejected = land(item);
    if (!rejected) return std::unexpected(rejected.error());
    landed.push_back({WriteOutcome::kApplied, *rejected});
    wrote_one = true;
  }
  return landed;
}

// An exactly-once SQL sink that lands groups (Sink::write_group) in one transaction: a single write() is a group of
// one, so both go through the same code.
class GroupLandingSink : public Sink {
 public:
  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) final {
    const BatchToLand item{batch, id, position_after};
    auto landed = write_group(std::span(&item, 1));
    if (!landed) return std::unexpected(landed.error());
    last_rejected_ = landed->front().rows_rejected;
    return landed->front().outcome;
  }
  uint64_t rows_rejected_by_last_write() const final { return last_rejected_; }
  bool keeps_ledger() const final { return true; }
  bool lands_groups() const final { return true; }

 private:
  uint64_t last_rejected_ = 0;
};

// True when no batch of the group needed writing (the transaction has nothing to commit).
inline bool all_already_applied(const std::vector<BatchLanded>& landed) {
  for (const auto& b : landed) {
    if (b.outcome != WriteOutcome::kAlreadyApplied) return false;
  }
  return true;
}

}  // namespace skippr
