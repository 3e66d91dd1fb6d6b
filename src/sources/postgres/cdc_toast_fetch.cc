// The fetch of unchanged TOASTed values for the Postgres CDC source (methods of cdc_detail::CdcSource): a poll's
// pending rows whose update left large values out of the stream are completed by reading them from the table by
// key, all at once, before the rows are appended to the poll's batch. Kept apart from cdc_source.cc because it is
// one self-contained step of the poll.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "clients/postgres/pg_client.h"
#include "sources/postgres/cdc_source_internal.h"
#include "sources/postgres/pg_table_reader.h"

namespace skippr::cdc_detail {
namespace {

// Rows per statement that fetches unchanged TOASTed values (two parameters or so per row; libpq allows 65535).
constexpr size_t kFetchRowsPerQuery = 500;

}  // namespace

Status CdcSource::flush_pending(Poll& result) {
  SKIPPR_TRY(fetch_unchanged_toast());
  for (const auto& row : pending_) {
    if (row.gone) continue;
    Batch& part = part_of(result, row.table);
    const size_t dead_before = result.dead_letters.size();
    SKIPPR_TRY(append_pending(part, row, result.dead_letters));
    for (size_t i = dead_before; i < result.dead_letters.size(); ++i) result.dead_letters[i].stream = part.stream;
  }
  pending_.clear();
  return ok();
}

// Under REPLICA IDENTITY DEFAULT an update leaves out every large (TOASTed) value it did not change, and a
// key-changing update has no old row to take them from: writing NULL would destroy them in the destination. They
// are read from the table by the row's (new) key, over the SQL connection, for all rows of the poll at once (per
// table). The table may hold a later version of the row than this change; that converges under merge_by_key,
// because every later change of the key is in the stream after this one and outranks it. A key no longer in the
// table was deleted (or moved) by a later, committed change, whose delete follows in the stream: the change is
// dropped, and the key ends deleted either way. So no NULL is ever written for an unchanged value.
Status CdcSource::fetch_unchanged_toast() {
  for (size_t t = 0; t < tables_.size(); ++t) {
    std::vector<size_t> rows;
    std::vector<bool> wanted(tables_[t].columns.size(), false);
    for (size_t r = 0; r < pending_.size(); ++r) {
      if (pending_[r].table != t || !pending_[r].to_fetch) continue;
      rows.push_back(r);
      for (size_t c = 0; c < pending_[r].values.size(); ++c) {
        if (pending_[r].values[c].from == PendingValue::From::kToFetch) wanted[c] = true;
      }
    }
    std::vector<size_t> wanted_columns;
    for (size_t c = 0; c < wanted.size(); ++c)
      if (wanted[c]) wanted_columns.push_back(c);
    for (size_t first = 0; first < rows.size(); first += kFetchRowsPerQuery) {
      const std::vector<size_t> chunk(
          rows.begin() + static_cast<std::ptrdiff_t>(first),
          rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), first + kFetchRowsPerQuery)));
      SKIPPR_TRY(fetch_chunk(t, chunk, wanted_columns));
    }
  }
  return ok();
}

Status CdcSource::fetch_chunk(size_t t, const std::vector<size_t>& rows, const std::vector<size_t>& wanted) {
  const CdcTable& table = tables_[t];
  std::vector<size_t> key_columns;
  for (const auto& k : table.key) key_columns.push_back(table.column_index(k));
  std::vector<std::optional<std::string>> params;
  std::vector<std::string> tuples, names = {"_skippr_i"}, join;
  for (size_t i = 0; i < table.key.size(); ++i) {
    names.push_back(fmt::format("_skippr_k{}", i));
    join.push_back(fmt::format("t.{} = v._skippr_k{}", pg_quote_identifier(table.key[i]), i));
  }
  for (size_t r : rows) {
    std::vector<std::string> tuple;
    params.push_back(std::to_string(r));
    tuple.push_back(fmt::format("${}::bigint", params.size()));
    for (size_t c : key_columns) {
      params.push_back(pending_[r].values[c].text);  // a key is never left out (see emit)
      tuple.push_back(fmt::format("${}::{}", params.size(), table.columns[c].pg_type));
    }
    tuples.push_back(fmt::format("({})", fmt::join(tuple, ", ")));
  }
  std::vector<std::string> select = {"v._skippr_i::text"};
  for (size_t c : wanted) select.push_back(pg_select_expression(table.columns[c]));
  const std::string sql =
      fmt::format("SELECT {} FROM (VALUES {}) AS v({}) JOIN {} t ON {}", fmt::join(select, ", "),
                  fmt::join(tuples, ", "), fmt::join(names, ", "), table.qualified, fmt::join(join, " AND "));
  auto found = sql_->query(sql, params);
  if (!found) {
    return fail(found.error().kind == ErrorKind::kUnavailable ? ErrorKind::kUnavailable : ErrorKind::kConfig,
                fmt::format("{}: updates of table {} left unchanged large (TOASTed) values out of the stream, and "
                            "reading them from the table by key failed: {}. Run again, or ALTER TABLE {} REPLICA "
                            "IDENTITY FULL so that later updates carry them",
                            what_, table.qualified, found.error().message, table.qualified));
  }
  for (size_t r : rows) pending_[r].gone = true;
  for (const auto& row : found->rows) {
    PendingRow& pending = pending_.at(std::stoull(row.at(0).value_or("0")));
    pending.gone = false;
    for (size_t w = 0; w < wanted.size(); ++w) {
      PendingValue& value = pending.values[wanted[w]];
      if (value.from != PendingValue::From::kToFetch) continue;
      value = {PendingValue::From::kTable, row.at(w + 1)};
    }
  }
  for (size_t r : rows) {
    if (pending_[r].gone) {
      spdlog::debug(
          "{}: dropped an update of {} whose key a later change removed (its unchanged TOASTed values are "
          "gone with it)",
          what_, table.qualified);
    }
  }
  return ok();
}

Status CdcSource::append_pending(Batch& batch, const PendingRow& row, std::vector<DeadLetter>& dead) const {
  const CdcTable& table = tables_[row.table];
  // A column added to the table since the part began (ALTER TABLE ADD COLUMN in the stream): NULL for the rows
  // before (additive evolution).
  for (const auto& c : table.columns) {
    if (batch.schema.index_of(c.name) < 0) batch.add_column({c.name, c.type});
  }
  for (size_t c = 0; c < table.columns.size(); ++c) {
    Column& column = batch.columns[static_cast<size_t>(batch.schema.index_of(table.columns[c].name))];
    const PendingValue* value = c < row.values.size() ? &row.values[c] : nullptr;
    const std::optional<std::string> none;
    const std::optional<std::string>& text = value ? value->text : none;
    const bool from_table = value && value->from == PendingValue::From::kTable;
    if (auto st =
            from_table ? pg_append_text_value(column, text) : pg_append_output_text(column, table.columns[c], text);
        !st) {
      if (!pg_is_infinite(column.type, text)) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("{}: column {} of {}: {}", what_, pg_quote_identifier(table.columns[c].name),
                                table.qualified, st.error().message));
      }
      column.append_null();
      nlohmann::json key;
      for (const auto& k : table.key) {
        const auto& v = row.values.at(table.column_index(k)).text;
        key[k] = v ? nlohmann::json(*v) : nlohmann::json();
      }
      dead.push_back(pg_infinite_dead_letter(
          table.qualified, table.columns[c], *text,
          nlohmann::json{{"key", key}, {std::string(kOpField), row.op}, {std::string(kOrderField), row.token}}));
    }
  }
  batch.columns[static_cast<size_t>(batch.schema.index_of(kOpField))].append_string(row.op);
  batch.columns[static_cast<size_t>(batch.schema.index_of(kOrderField))].append_string(row.token);
  batch.rows += 1;
  return ok();
}

}  // namespace skippr::cdc_detail
