// merge_by_key in Redshift's SQL. Redshift has no ON CONFLICT, no DISTINCT ON, no SELECT * EXCLUDE, and its MERGE
// takes no condition on WHEN MATCHED, so the rule the other merging sinks follow (sinks/kit/merge_sql.h) is spelled as
// UPDATE ... FROM, DELETE ... USING and INSERT ... SELECT over a temp table of each key's newest change:
//  - per key only the batch's newest change counts (by order token, then the later row on a tie);
//  - an upsert never overwrites a row with a newer token, nor resurrects a key whose tombstone is as new or newer;
//  - a delete removes an older row and records (or advances) the key's tombstone;
//  - a truncate (CDC: every row older than its token is gone) removes every older row first.
// The statements run inside the batch's transaction, after the stage holds the batch; its ledger row follows.
#pragma once

#include <string>
#include <vector>

#include "core/batch.h"

namespace skippr {

struct RedshiftMerge {
  std::string table;       // the target, quoted and qualified
  std::string table_name;  // the target's own name, quoted: how a DELETE ... USING refers to its rows
  std::string tombstones;  // its tombstone table, quoted and qualified
  std::string tombstones_name;
  std::string stage;                   // the temp table holding the batch and kRowNumberColumn, quoted
  std::string latest;                  // the temp table the statements fill with each key's newest change, quoted
  std::vector<std::string> keys;       // the primary key's columns, quoted
  std::vector<std::string> key_types;  // their SQL types, for the tombstone table
  std::vector<std::string> data;       // the batch's data columns (change fields left out), quoted
  std::string order;                   // kOrderColumn, quoted
  std::string row;                     // kRowNumberColumn, quoted
  std::string op;                      // kOpField, quoted (when the batch has it)
};

// Redshift's 38-digit integer: the order token's type.
inline constexpr const char* kRedshiftTokenType = "NUMERIC(38,0)";

// The statements, in order, that merge the staged `batch` (its schema says which change fields it has) of `id`.
std::vector<std::string> redshift_merge_sql(const RedshiftMerge& m, const Batch& batch, const BatchId& id);

}  // namespace skippr
