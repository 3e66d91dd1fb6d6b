#include "sources/postgres/postgres_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "clients/postgres/pg_client.h"
#include "sources/postgres/cdc_source.h"
#include "sources/postgres/pg_table_reader.h"

namespace skippr {
namespace {

constexpr size_t kEstimatedRowBytes = 200;  // only sizes the LIMIT of a poll
constexpr size_t kMaxRowsPerPoll = 50000;

enum class Mode { kIncremental, kSnapshot };

class PostgresSource final : public Source {
 public:
  PostgresSource(const ConnectorContext& ctx, std::string schema, std::string table, Mode mode, std::string cursor)
      : params_(ctx.params),
        what_(fmt::format("source '{}'", ctx.name)),
        qualified_(pg_qualified(schema, table)),
        mode_(mode),
        cursor_(std::move(cursor)),
        key_(ctx.primary_key) {}

  Status open() override;
  // Its positions name data that can be read again from there, whoever committed them.
  bool resumes_from_destination() const override { return true; }
  Status seek(const Position& position) override;
  Result<Poll> poll(const Budget& budget) override;

 private:
  Result<PgConnection*> connection();
  // The ordering columns: (cursor, key...) for incremental, (key...) for snapshot.
  std::vector<std::string> order_columns() const {
    std::vector<std::string> order;
    if (mode_ == Mode::kIncremental) order.push_back(cursor_);
    order.insert(order.end(), key_.begin(), key_.end());
    return order;
  }
  std::string select_sql(size_t limit) const;
  Position position() const;

  nlohmann::json params_;
  std::string what_;
  std::string qualified_;
  Mode mode_;
  std::string cursor_;
  std::vector<std::string> key_;
  std::vector<PgSourceColumn> columns_;
  std::optional<PgConnection> conn_;
  std::optional<std::vector<std::string>> last_;  // the ordering values of the last row read, as text
  bool snapshot_done_ = false;
};

Result<PgConnection*> PostgresSource::connection() {
  if (conn_ && !conn_->broken()) return &*conn_;
  conn_.reset();
  auto conn = PgConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  // Values come back in forms that do not depend on the server's or the user's settings.
  SKIPPR_TRY(
      conn->execute("SET TIME ZONE 'UTC'; SET DateStyle = 'ISO'; SET bytea_output = 'hex'; SET "
                    "extra_float_digits = 1"));
  conn_ = std::move(*conn);
  return &*conn_;
}

Status PostgresSource::open() {
  auto conn = connection();
  if (!conn) return std::unexpected(conn.error());
  auto table = pg_describe_keyed_table(**conn, qualified_, key_, what_, "orders the read and breaks ties between rows");
  if (!table) return std::unexpected(table.error());
  columns_ = std::move(table->columns);
  key_ = std::move(table->key);
  auto has = [&](const std::string& name) {
    return std::ranges::any_of(columns_, [&](const PgSourceColumn& c) { return c.name == name; });
  };
  for (const auto& name : order_columns()) {
    if (!has(name)) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: table {} has no column {} (named as {}); check skippr.yml", what_, qualified_,
                              pg_quote_identifier(name), name == cursor_ ? "cursor_column" : "primary_key"));
    }
  }
  return ok();
}

Status PostgresSource::seek(const Position& position) {
  last_.reset();
  snapshot_done_ = false;
  if (position.empty()) return ok();
  auto parsed = nlohmann::json::parse(position.token, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("after") || !parsed["after"].is_array()) {
    return fail(ErrorKind::kCorruption, fmt::format("{}: unreadable resume position '{}'", what_, position.token));
  }
  if (!parsed["after"].empty()) last_ = parsed["after"].get<std::vector<std::string>>();
  snapshot_done_ = parsed.value("done", false);
  return ok();
}

Position PostgresSource::position() const {
  nlohmann::json p = {{"after", last_.value_or(std::vector<std::string>{})}};
  if (snapshot_done_) p["done"] = true;
  return Position{p.dump()};
}

std::string PostgresSource::select_sql(size_t limit) const {
  // A NULL cursor never compares, so such rows are left out of every poll alike (documented), not only of the later
  // ones.
  std::vector<std::string> conditions;
  if (mode_ == Mode::kIncremental) conditions.push_back(fmt::format("t.{} IS NOT NULL", pg_quote_identifier(cursor_)));
  return pg_keyset_select_sql(qualified_, columns_, order_columns(), last_.has_value(), limit, conditions);
}

Result<Poll> PostgresSource::poll(const Budget& budget) {
  Poll result;
  if (snapshot_done_) {
    result.position_after = position();
    result.drained = true;
    return result;
  }
  auto conn = connection();
  if (!conn) return std::unexpected(conn.error());
  const size_t limit =
      std::clamp<size_t>(std::min(budget.max_rows, budget.max_bytes / kEstimatedRowBytes), 1, kMaxRowsPerPoll);
  std::vector<std::optional<std::string>> params;
  if (last_) params.assign(last_->begin(), last_->end());
  auto rows = (*conn)->query(select_sql(limit), params);
  if (!rows) {
    return fail(rows.error().kind == ErrorKind::kConfig ? ErrorKind::kConfig : ErrorKind::kUnavailable,
                fmt::format("{}: reading {}: {}", what_, qualified_, rows.error().message));
  }
  Batch& batch = result.records;
  for (const auto& c : columns_) batch.add_column({c.name, c.type});
  const size_t ordering = order_columns().size();
  for (const auto& row : rows->rows) {
    SKIPPR_TRY(pg_append_row(batch, columns_, row, what_, qualified_, result.dead_letters));
    batch.rows += 1;
  }
  if (!rows->rows.empty()) {
    const auto& last_row = rows->rows.back();
    std::vector<std::string> after;
    for (size_t i = 0; i < ordering; ++i) after.push_back(last_row[columns_.size() + i].value_or(""));
    last_ = std::move(after);
  }
  result.drained = rows->rows.size() < limit;
  if (result.drained && mode_ == Mode::kSnapshot) snapshot_done_ = true;
  result.position_after = position();
  return result;
}

}  // namespace

ConnectorSpec postgres_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "Postgres";
  // CDC only: what the slot holds past the position read.
  spec.backlog = BacklogUnit{
      "wal_bytes", "CDC: bytes of the server's WAL (pg_current_wal_lsn) past the position read, which the slot holds.",
      "of WAL", true};
  spec.is_source = true;
  spec.summary =
      "a PostgreSQL table, read incrementally by a cursor column, as a snapshot, or as a change stream (CDC)";
  spec.params = pg_connection_params();
  spec.params.push_back({"schema", ParamType::kString, false, "public", "the tables' schema"});
  spec.params.push_back({"tables", ParamType::kStringList, true, nullptr, "the table to read (one in this build)"});
  spec.params.push_back({"mode", ParamType::kString, false, "incremental",
                         "incremental | snapshot | snapshot_then_cdc (the table, then its changes through logical "
                         "replication) | cdc_only (changes from now on)"});
  spec.params.push_back({"cursor_column", ParamType::kString, false, nullptr,
                         "incremental: a column that grows with every change (updated_at, an id); the primary key "
                         "breaks ties"});
  spec.params.push_back({"slot", ParamType::kString, false, nullptr,
                         "CDC: the logical replication slot (default skippr_<pipeline>_<hash of the name>, one per "
                         "pipeline)"});
  spec.params.push_back({"publication", ParamType::kString, false, nullptr,
                         "CDC: the publication, created for the table when missing (default as slot)"});
  spec.params.push_back({"primary_key_unique", ParamType::kBool, false, false,
                         "CDC: primary_key is unique although no unique index or primary key backs it (checked "
                         "while the snapshot is read)"});
  spec.params.push_back({"on_truncate", ParamType::kString, false, "apply",
                         "CDC: what a TRUNCATE of the table in the stream does: apply (a truncate row; merge_by_key "
                         "removes the older rows) | stop (exit 2, with the ways forward) | ignore (the destination "
                         "keeps the rows)"});
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    SKIPPR_TRY(check_pg_connection_params(ctx.params, fmt::format("source '{}'", ctx.name)));
    const auto& p = ctx.params;
    const std::string mode_text = p.value("mode", std::string("incremental"));
    const auto tables = p.value("tables", std::vector<std::string>{});
    const std::string cursor = p.contains("cursor_column") && p["cursor_column"].is_string()
                                   ? p["cursor_column"].get<std::string>()
                                   : std::string();
    const bool cdc = mode_text == "snapshot_then_cdc" || mode_text == "cdc_only";
    if (!cdc && mode_text != "incremental" && mode_text != "snapshot") {
      return fail(ErrorKind::kConfig, fmt::format("source '{}': unknown mode '{}'; use incremental, snapshot, "
                                                  "snapshot_then_cdc or cdc_only",
                                                  ctx.name, mode_text));
    }
    if (tables.size() != 1) {
      return fail(ErrorKind::kConfig, fmt::format("source '{}': name exactly one table in `tables` (this build reads "
                                                  "one table per pipeline); got {}",
                                                  ctx.name, tables.size()));
    }
    // "schema.table" in `tables` overrides `schema`.
    std::string schema = p.value("schema", std::string("public")), table = tables[0];
    if (auto dot = table.find('.'); dot != std::string::npos) {
      schema = table.substr(0, dot);
      table = table.substr(dot + 1);
    }
    if (cdc) {
      return make_cdc_source(ctx, schema, table,
                             mode_text == "cdc_only" ? CdcMode::kCdcOnly : CdcMode::kSnapshotThenCdc);
    }
    const Mode mode = mode_text == "snapshot" ? Mode::kSnapshot : Mode::kIncremental;
    if (mode == Mode::kIncremental && cursor.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("source '{}': mode incremental needs cursor_column (a column that "
                                                  "grows with every change, e.g. updated_at); add it",
                                                  ctx.name));
    }
    return std::make_unique<PostgresSource>(ctx, schema, table, mode, cursor);
  };
  return spec;
}

}  // namespace skippr
