// merge_by_key as SQL, shared by the sinks whose engine has MERGE, QUALIFY and SELECT * EXCLUDE (DuckDB, Snowflake,
// BigQuery, Databricks):
// the statements that move a staged batch into the target. Per key only the batch's newest change counts (the later
// row on a tie); an upsert never overwrites a row with a newer order token nor resurrects a key whose tombstone is
// newer; a delete removes an older row and records (or advances) the key's tombstone; a truncate removes every older
// row. Replaying the same batch changes nothing. Each sink supplies its quoting, its names and its big integer type.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "sinks/kit/schema_evolution.h"

namespace skippr {

// The staging table's last column: the row's index in the batch (part of the derived order token, and the tie
// breaker between two changes of one key with the same token).
inline constexpr std::string_view kRowNumberColumn = "_skippr_row";

struct MergeSql {
  std::string table;       // the target, as SQL (quoted, qualified as the sink needs)
  std::string tombstones;  // its tombstone table, as SQL
  std::string stage;       // the staging table holding the batch and kRowNumberColumn, as SQL
  std::vector<std::string> primary_key;
  std::vector<TableColumn> columns;  // the target's, after schema evolution, with the order column
  ColumnRules rules;
  std::string token_type;  // an integer type of 38 digits: HUGEINT, NUMBER(38,0), BIGNUMERIC
  // GoogleSQL spells SELECT * EXCLUDE as EXCEPT, and takes QUALIFY only after a WHERE.
  std::string exclude_keyword = "EXCLUDE";
  bool qualify_needs_where = false;
  // A truncate's token written into the statements as a literal, not a subquery of the stage (Databricks' DELETE takes
  // no subquery nested in its condition).
  bool truncate_token_as_literal = false;
};

// The pieces of SQL every merge statement is made of (Redshift's merge, which has no MERGE, uses them too):
// `a, b, c`; `s.a`, `s.b` for alias `s`; `a.k1 = b.k1 AND a.k2 = b.k2`.
std::string sql_list(const std::vector<std::string>& parts, std::string_view separator = ", ");
std::vector<std::string> qualified_names(const std::vector<std::string>& names, std::string_view alias);
std::string keys_equal(const std::vector<std::string>& keys, std::string_view a, std::string_view b);

// The key a batch merges on: its own (Batch::key, from a source that keys each stream, Source::keys_streams), else the
// pipeline's primary_key.
const std::vector<std::string>& merge_key_of(const Batch& batch, const std::vector<std::string>& pipeline_key);
// kConfig naming the stream when neither it nor the pipeline has a key to merge on.
Status no_merge_key(const Batch& batch, std::string_view where);

// kBadInput naming the field and row when a change field or a key value is unusable: _skippr_op not one of
// "insert", "update", "delete" (or NULL = upsert); _skippr_order NULL, negative or not a decimal integer of at most 38
// digits; a key NULL. A key field the batch lacks (by the sink's name rule) is kConfig.
Status check_merge_rows(const Batch& batch, const std::vector<std::string>& primary_key, const ColumnRules& rules,
                        std::string_view where);

// Whether any row of the batch is a delete (only then are tombstones touched).
bool has_deletes(const Batch& batch);

// CREATE TABLE IF NOT EXISTS of the tombstone table (keys with their target types, and the order token).
std::string tombstones_create_sql(const MergeSql& m);
// The statements, in order, that apply the staged batch `batch` (its schema: which change fields it has) of `id`.
std::vector<std::string> merge_apply_sql(const Batch& batch, const BatchId& id, const MergeSql& m, bool with_deletes);

}  // namespace skippr
