#include "sinks/redshift/redshift_merge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/change_fields.h"
#include "sinks/kit/merge_sql.h"

namespace skippr {
namespace {

// The batch's derived token base, (epoch * 2^40 + seq) * 2^32, as a decimal literal: the row's index is added to it.
// Computed here rather than in SQL so no intermediate product needs more precision than NUMERIC(38,0) keeps.
std::string derived_token_base(const BatchId& id) {
  unsigned __int128 base = ((static_cast<unsigned __int128>(id.epoch) << 40) + id.seq) << 32;
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(base % 10)));
    base /= 10;
  } while (base != 0);
  return digits;
}

}  // namespace

std::vector<std::string> redshift_merge_sql(const RedshiftMerge& m, const Batch& batch, const BatchId& id) {
  // The order token: the source's (the LSN for CDC), else the batch's place in the pipeline then the row's in the
  // batch, as every merging sink computes it, so a later batch always wins (a new epoch after RESET included).
  const std::string token =
      batch.schema.index_of(kOrderField) >= 0
          ? fmt::format("CAST(s.{} AS {})", m.order, kRedshiftTokenType)
          : fmt::format("(CAST('{}' AS {}) + s.{})", derived_token_base(id), kRedshiftTokenType, m.row);
  const bool has_op = batch.schema.index_of(kOpField) >= 0;
  const std::string is_delete = has_op ? fmt::format("coalesce(s.{} = 'delete', false)", m.op) : "false";

  std::vector<std::string> statements;
  std::string after_truncate;
  if (has_truncates(batch)) {
    const std::string truncate_token = fmt::format("(SELECT max(CAST(z.{} AS {})) FROM {} z WHERE z.{} = '{}')",
                                                   m.order, kRedshiftTokenType, m.stage, m.op, kTruncateOp);
    statements.push_back(fmt::format("DELETE FROM {} WHERE {} < {}", m.table, m.order, truncate_token));
    after_truncate =
        fmt::format(" WHERE coalesce(s.{} <> '{}', true) AND {} >= {}", m.op, kTruncateOp, token, truncate_token);
  }
  statements.push_back(fmt::format("DROP TABLE IF EXISTS {}", m.latest));
  statements.push_back(fmt::format(
      "CREATE TEMP TABLE {0} AS SELECT {1}, _skippr_token, _skippr_delete FROM (SELECT {2}, {3} AS _skippr_token, {4} "
      "AS _skippr_delete, row_number() OVER (PARTITION BY {5} ORDER BY {3} DESC, s.{6} DESC) AS _skippr_rank FROM {7} "
      "s{8}) newest WHERE _skippr_rank = 1",
      m.latest, sql_list(m.data), sql_list(qualified_names(m.data, "s")), token, is_delete,
      sql_list(qualified_names(m.keys, "s")), m.row, m.stage, after_truncate));

  std::vector<std::string> tomb_columns;
  for (size_t k = 0; k < m.keys.size(); ++k) tomb_columns.push_back(m.keys[k] + " " + m.key_types[k]);
  statements.push_back(fmt::format("CREATE TABLE IF NOT EXISTS {} ({}, {} {} NOT NULL)", m.tombstones,
                                   sql_list(tomb_columns), m.order, kRedshiftTokenType));
  const std::string older_row = fmt::format("({0}.{1} IS NULL OR {0}.{1} < l._skippr_token)", m.table_name, m.order);
  const std::string no_newer_tombstone =
      fmt::format("NOT EXISTS (SELECT 1 FROM {} d WHERE {} AND d.{} >= l._skippr_token)", m.tombstones,
                  keys_equal(m.keys, "d", "l"), m.order);
  // An upsert updates an older row in place: the columns this batch does not carry keep their values, as in every
  // merging sink.
  std::vector<std::string> updates;
  for (const auto& name : m.data) {
    if (std::find(m.keys.begin(), m.keys.end(), name) == m.keys.end()) updates.push_back(name + " = l." + name);
  }
  updates.push_back(m.order + " = l._skippr_token");
  statements.push_back(fmt::format("UPDATE {} SET {} FROM {} l WHERE NOT l._skippr_delete AND {} AND {} AND {}",
                                   m.table, sql_list(updates), m.latest, keys_equal(m.keys, m.table_name, "l"),
                                   older_row, no_newer_tombstone));
  // A delete removes an older row.
  statements.push_back(fmt::format("DELETE FROM {} USING {} l WHERE l._skippr_delete AND {} AND {}", m.table, m.latest,
                                   keys_equal(m.keys, m.table_name, "l"), older_row));
  // An upsert of a key without a row is inserted, unless a tombstone as new or newer says the key was deleted later.
  statements.push_back(fmt::format(
      "INSERT INTO {0} ({1}, {2}) SELECT {3}, l._skippr_token FROM {4} l WHERE NOT l._skippr_delete AND NOT EXISTS "
      "(SELECT 1 FROM {0} t WHERE {5}) AND {6}",
      m.table, sql_list(m.data), m.order, sql_list(qualified_names(m.data, "l")), m.latest,
      keys_equal(m.keys, "t", "l"), no_newer_tombstone));
  if (has_op) {
    // Each delete is remembered, so an older insert arriving late stays deleted.
    statements.push_back(
        fmt::format("DELETE FROM {} USING {} l WHERE l._skippr_delete AND {} AND {}.{} < l._skippr_token", m.tombstones,
                    m.latest, keys_equal(m.keys, m.tombstones_name, "l"), m.tombstones_name, m.order));
    statements.push_back(fmt::format(
        "INSERT INTO {0} ({1}, {2}) SELECT {3}, l._skippr_token FROM {4} l WHERE l._skippr_delete AND NOT EXISTS "
        "(SELECT 1 FROM {0} d WHERE {5})",
        m.tombstones, sql_list(m.keys), m.order, sql_list(qualified_names(m.keys, "l")), m.latest,
        keys_equal(m.keys, "d", "l")));
  }
  return statements;
}

}  // namespace skippr
