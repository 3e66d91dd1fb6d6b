#include "sinks/kit/batch_ledger.h"

#include <fmt/format.h>

#include <algorithm>

#include "sinks/kit/stream_tables.h"

namespace skippr {

namespace {
std::string name(const LedgerDialect& d, std::string_view text) {
  return d.quote_identifier ? d.quote_identifier(text) : fmt::format("\"{}\"", text);
}

std::string ledger_table(const LedgerDialect& d, std::string_view suffix = "") {
  return d.schema_prefix + name(d, fmt::format("{}{}", kLedgerTable, suffix));
}

std::string or_null(const LedgerDialect& d, std::string_view text) {
  return text.empty() ? std::string("NULL") : d.quote_literal(text);
}

// `target_table LIKE <target_like>`, its kLikeEscape escapes said in the engine's way.
std::string target_like_sql(const LedgerDialect& d, std::string_view target_like) {
  if (!d.like_escapes_with_backslash) {
    return fmt::format("target_table LIKE {} ESCAPE '{}'", d.quote_literal(target_like), kLikeEscape);
  }
  std::string pattern;
  for (size_t i = 0; i < target_like.size(); ++i) {
    if (target_like[i] == kLikeEscape && i + 1 < target_like.size()) {
      pattern += '\\';
      pattern += target_like[++i];
    } else {
      if (target_like[i] == '\\') pattern += '\\';  // a backslash of the name itself
      pattern += target_like[i];
    }
  }
  return fmt::format("target_table LIKE {}", d.quote_literal(pattern));  // the literal doubles each backslash
}
}  // namespace

std::string ledger_columns_sql(const LedgerDialect& d) {
  return fmt::format("SELECT column_name FROM information_schema.columns WHERE table_name = {} AND {}",
                     d.quote_literal(kLedgerTable), d.schema_predicate);
}

LedgerFormat ledger_format(const std::vector<std::string>& columns) {
  if (columns.empty()) return LedgerFormat::kAbsent;
  return std::find(columns.begin(), columns.end(), "position_after") != columns.end() ? LedgerFormat::kCurrent
                                                                                      : LedgerFormat::kFirst;
}

namespace {
std::string create_sql(const LedgerDialect& d, std::string_view suffix) {
  return fmt::format(
      "CREATE TABLE IF NOT EXISTS {0} (target_table {1} NOT NULL, batch_id {1} NOT NULL, pipeline {1}, lineage {1}, "
      "epoch {2}, seq {2}, \"rows\" {2}, position_after {1}, landed_at TIMESTAMPTZ DEFAULT now(), "
      "PRIMARY KEY (target_table, batch_id))",
      ledger_table(d, suffix), d.text_type, d.uint_type);
}
}  // namespace

std::string ledger_create_sql(const LedgerDialect& d) { return create_sql(d, ""); }

std::vector<std::string> ledger_migrate_sql(const LedgerDialect& d) {
  // The new table is made beside the old one and renamed over it, so no index name of the old one is in the way.
  const std::string next = ledger_table(d, "_next");
  return {
      fmt::format("DROP TABLE IF EXISTS {}", next),
      create_sql(d, "_next"),
      fmt::format("INSERT INTO {} (target_table, batch_id, pipeline, epoch, seq, \"rows\", landed_at) SELECT "
                  "coalesce(target_table, ''), batch_id, pipeline, epoch, seq, \"rows\", landed_at FROM {}",
                  next, ledger_table(d)),
      fmt::format("DROP TABLE {}", ledger_table(d)),
      fmt::format("ALTER TABLE {} RENAME TO \"{}\"", next, kLedgerTable),
  };
}

std::string ledger_has_lineage_sql(const LedgerDialect& d, std::string_view target, std::string_view pipeline,
                                   std::string_view lineage) {
  return fmt::format("SELECT 1 FROM {} WHERE target_table = {} AND pipeline = {} AND lineage = {} LIMIT 1",
                     ledger_table(d), d.quote_literal(target), d.quote_literal(pipeline), d.quote_literal(lineage));
}

std::string ledger_has_lineage_any_table_sql(const LedgerDialect& d, std::string_view target_like,
                                             std::string_view pipeline, std::string_view lineage) {
  return fmt::format("SELECT 1 FROM {} WHERE {} AND pipeline = {} AND lineage = {} LIMIT 1", ledger_table(d),
                     target_like_sql(d, target_like), d.quote_literal(pipeline), d.quote_literal(lineage));
}

std::string ledger_has_sql(const LedgerDialect& d, std::string_view target, const BatchId& id) {
  return fmt::format("SELECT 1 FROM {} WHERE target_table = {} AND batch_id = {}", ledger_table(d),
                     d.quote_literal(target), d.quote_literal(id.str()));
}

namespace {
std::string ledger_values(const LedgerDialect& d, std::string_view target, const BatchId& id, uint64_t rows,
                          const Position& position_after) {
  return fmt::format("{}, {}, {}, {}, {}, {}, {}, {}", d.quote_literal(target), d.quote_literal(id.str()),
                     d.quote_literal(id.pipeline), or_null(d, id.lineage), id.epoch, id.seq, rows,
                     or_null(d, position_after.token));
}
std::string ledger_insert_head(const LedgerDialect& d) {
  return fmt::format("INSERT INTO {} (target_table, batch_id, pipeline, lineage, epoch, seq, {}, position_after)",
                     ledger_table(d), name(d, "rows"));
}
}  // namespace

std::string ledger_insert_sql(const LedgerDialect& d, std::string_view target, const BatchId& id, uint64_t rows,
                              const Position& position_after) {
  return fmt::format("{} VALUES ({})", ledger_insert_head(d), ledger_values(d, target, id, rows, position_after));
}

std::string ledger_insert_unless_landed_sql(const LedgerDialect& d, std::string_view target, const BatchId& id,
                                            uint64_t rows, const Position& position_after, std::string_view also) {
  // FROM a one-row derived table: GoogleSQL takes no WHERE without a FROM.
  return fmt::format("{} SELECT {} FROM (SELECT 1 AS one) AS one_row WHERE NOT EXISTS ({}){}{}", ledger_insert_head(d),
                     ledger_values(d, target, id, rows, position_after), ledger_has_sql(d, target, id),
                     also.empty() ? "" : " AND ", also);
}

std::optional<LedgerTip> ledger_tip_of(const std::vector<std::vector<std::optional<std::string>>>& rows) {
  if (rows.empty()) return std::nullopt;
  const auto& row = rows.front();
  return LedgerTip{row.at(0).value_or(""), Position{row.at(1).value_or("")}, std::stoull(row.at(2).value_or("0"))};
}

namespace {

std::string tip_sql(const LedgerDialect& d, const std::string& mine) {
  // Newest by (epoch, seq), not by the clock: every new lineage starts above the epochs the destination holds (a
  // resume from the ledger takes max + 1, RESET adds one), and seq only grows within one.
  return fmt::format(
      "SELECT batch_id, position_after, CAST((SELECT max(epoch) FROM {0} WHERE {1}) AS {2}) FROM {0} WHERE {1} "
      "ORDER BY epoch DESC, seq DESC LIMIT 1",
      ledger_table(d), mine, d.text_type);
}

}  // namespace

std::string ledger_tip_sql(const LedgerDialect& d, std::string_view target, std::string_view pipeline) {
  return tip_sql(
      d, fmt::format("target_table = {} AND pipeline = {}", d.quote_literal(target), d.quote_literal(pipeline)));
}

std::string ledger_tip_any_table_sql(const LedgerDialect& d, std::string_view target_like, std::string_view pipeline) {
  return tip_sql(d, fmt::format("{} AND pipeline = {}", target_like_sql(d, target_like), d.quote_literal(pipeline)));
}

}  // namespace skippr
