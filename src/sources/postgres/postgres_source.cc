#include "sources/postgres/postgres_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <ranges>

#include "clients/postgres/pg_client.h"
#include "core/table_selection.h"
#include "sources/postgres/cdc_source.h"
#include "sources/postgres/pg_table_reader.h"
#include "sources/postgres/table_selection.h"

namespace skippr {
namespace {

constexpr size_t kEstimatedRowBytes = 200;  // only sizes the LIMIT of a poll
constexpr size_t kMaxRowsPerPoll = 50000;

enum class Mode { kIncremental, kSnapshot };

// One table's keyset read: ordered by (cursor, key) for incremental, by key for a snapshot, resumed after the
// ordering values of the last row read.
class TableRead {
 public:
  TableRead(SelectedTable table, Mode mode, std::string cursor, std::vector<std::string> key)
      : table_(std::move(table)),
        qualified_(pg_qualified(table_.schema, table_.table)),
        mode_(mode),
        cursor_(std::move(cursor)),
        key_(std::move(key)) {}

  const std::string& stream() const { return table_.stream; }
  const std::string& qualified() const { return qualified_; }
  bool finished() const { return snapshot_done_; }

  Status describe(PgConnection& conn, std::string_view what) {
    auto table = pg_describe_keyed_table(conn, qualified_, key_, what, "orders the read and breaks ties between rows");
    if (!table) return std::unexpected(table.error());
    columns_ = std::move(table->columns);
    key_ = std::move(table->key);
    auto has = [&](const std::string& name) {
      return std::ranges::any_of(columns_, [&](const PgSourceColumn& c) { return c.name == name; });
    };
    for (const auto& name : order_columns()) {
      if (!has(name)) {
        return fail(ErrorKind::kConfig,
                    fmt::format("{}: table {} has no column {} (named as {}); check skippr.yml", what, qualified_,
                                pg_quote_identifier(name), name == cursor_ ? "cursor_column" : "primary_key"));
      }
    }
    return ok();
  }

  // `position`: this table's part of the source's position; null = from the start.
  bool seek(const nlohmann::json& position) {
    last_.reset();
    snapshot_done_ = false;
    if (position.is_null()) return true;
    if (!position.is_object() || !position.contains("after") || !position["after"].is_array()) return false;
    if (!position["after"].empty()) last_ = position["after"].get<std::vector<std::string>>();
    snapshot_done_ = position.value("done", false);
    return true;
  }

  nlohmann::json position() const {
    nlohmann::json p = {{"after", last_.value_or(std::vector<std::string>{})}};
    if (snapshot_done_) p["done"] = true;
    return p;
  }

  // Reads up to `limit` rows into `batch`; true when the table had no more (it is drained for now).
  Result<bool> read(PgConnection& conn, size_t limit, Batch& batch, std::vector<DeadLetter>& dead,
                    std::string_view what) {
    std::vector<std::optional<std::string>> params;
    if (last_) params.assign(last_->begin(), last_->end());
    auto rows = conn.query(select_sql(limit), params);
    if (!rows) {
      return fail(rows.error().kind == ErrorKind::kConfig ? ErrorKind::kConfig : ErrorKind::kUnavailable,
                  fmt::format("{}: reading {}: {}", what, qualified_, rows.error().message));
    }
    for (const auto& c : columns_) batch.add_column({c.name, c.type});
    const size_t ordering = order_columns().size();
    for (const auto& row : rows->rows) {
      SKIPPR_TRY(pg_append_row(batch, columns_, row, what, qualified_, dead));
      batch.rows += 1;
    }
    if (!rows->rows.empty()) {
      const auto& last_row = rows->rows.back();
      std::vector<std::string> after;
      for (size_t i = 0; i < ordering; ++i) after.push_back(last_row[columns_.size() + i].value_or(""));
      last_ = std::move(after);
    }
    const bool drained = rows->rows.size() < limit;
    if (drained && mode_ == Mode::kSnapshot) snapshot_done_ = true;
    return drained;
  }

 private:
  // The ordering columns: (cursor, key...) for incremental, (key...) for snapshot.
  std::vector<std::string> order_columns() const {
    std::vector<std::string> order;
    if (mode_ == Mode::kIncremental) order.push_back(cursor_);
    order.insert(order.end(), key_.begin(), key_.end());
    return order;
  }
  std::string select_sql(size_t limit) const {
    // A NULL cursor never compares, so such rows are left out of every poll alike (documented), not only of the
    // later ones.
    std::vector<std::string> conditions;
    if (mode_ == Mode::kIncremental) {
      conditions.push_back(fmt::format("t.{} IS NOT NULL", pg_quote_identifier(cursor_)));
    }
    return pg_keyset_select_sql(qualified_, columns_, order_columns(), last_.has_value(), limit, conditions);
  }

  SelectedTable table_;
  std::string qualified_;
  Mode mode_;
  std::string cursor_;
  std::vector<std::string> key_;
  std::vector<PgSourceColumn> columns_;
  std::optional<std::vector<std::string>> last_;  // the ordering values of the last row read, as text
  bool snapshot_done_ = false;
};

// Reads every selected table, one after another: each poll continues the table the last one was in, and moves on
// when it is drained; the source is drained when a whole round found nothing new. One table keeps the position
// format of a one-table source ({"after": [...], "done": true}); several keep one such part per stream
// ({"tables": {"orders": {...}}}), so a table added to the list later starts from its beginning and a removed one
// is forgotten.
class PostgresSource final : public Source {
 public:
  PostgresSource(const ConnectorContext& ctx, TableSelection selection, Mode mode, std::string cursor)
      : params_(ctx.params),
        what_(fmt::format("source '{}'", ctx.name)),
        selection_(std::move(selection)),
        mode_(mode),
        cursor_(std::move(cursor)),
        key_(ctx.primary_key) {}

  Status open() override;
  // Its positions name data that can be read again from there, whoever committed them.
  bool resumes_from_destination() const override { return true; }
  bool names_streams() const override { return selection_.names_streams(); }
  Status seek(const Position& position) override;
  Result<Poll> poll(const Budget& budget) override;

 private:
  Result<PgConnection*> connection();
  Position position() const;

  nlohmann::json params_;
  std::string what_;
  TableSelection selection_;
  Mode mode_;
  std::string cursor_;
  std::vector<std::string> key_;
  std::optional<PgConnection> conn_;
  std::vector<TableRead> tables_;
  size_t current_ = 0;  // the table the next poll reads
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
  // One table named plainly is read as it always was (a view included); several, or a pattern, through the catalog.
  auto selected = names_streams() ? select_tables(**conn, selection_, what_)
                                  : Result<std::vector<SelectedTable>>(std::vector{selection_.single()});
  if (!selected) return std::unexpected(selected.error());
  tables_.clear();
  for (auto& table : *selected) {
    tables_.emplace_back(std::move(table), mode_, cursor_, key_);
    SKIPPR_TRY(tables_.back().describe(**conn, what_));
  }
  if (!names_streams()) return ok();
  spdlog::info("{}: {} table{} selected: {}", what_, tables_.size(), tables_.size() == 1 ? "" : "s",
               fmt::join(tables_ | std::views::transform(&TableRead::qualified), ", "));
  return ok();
}

Status PostgresSource::seek(const Position& position) {
  current_ = 0;
  std::vector<std::string> streams;
  for (const auto& table : tables_) streams.push_back(table.stream());
  auto parts = table_parts_of(position, names_streams(), streams);
  for (size_t t = 0; parts && t < tables_.size(); ++t) {
    if (!tables_[t].seek((*parts)[t])) parts.reset();
  }
  if (!parts) {
    return fail(ErrorKind::kCorruption, fmt::format("{}: unreadable resume position '{}'", what_, position.token));
  }
  return ok();
}

Position PostgresSource::position() const {
  std::vector<std::pair<std::string, nlohmann::json>> parts;
  for (const auto& table : tables_) parts.emplace_back(table.stream(), table.position());
  return table_parts_position(names_streams(), parts);
}

Result<Poll> PostgresSource::poll(const Budget& budget) {
  Poll result;
  auto conn = connection();
  if (!conn) return std::unexpected(conn.error());
  const size_t limit =
      std::clamp<size_t>(std::min(budget.max_rows, budget.max_bytes / kEstimatedRowBytes), 1, kMaxRowsPerPoll);
  result.drained = true;
  for (size_t tried = 0; tried < tables_.size(); ++tried) {
    TableRead& table = tables_[current_];
    bool drained = true;
    if (!table.finished()) {
      Batch batch;
      auto read = table.read(**conn, limit, batch, result.dead_letters, what_);
      if (!read) return std::unexpected(read.error());
      drained = *read;
      if (batch.rows > 0) {
        if (names_streams()) batch.stream = table.stream();
        result.records = std::move(batch);
        result.drained = false;
      }
    }
    if (drained) current_ = (current_ + 1) % tables_.size();
    if (!result.drained) break;
  }
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
  add_table_reading_params(
      spec.params,
      "the tables to read: names (orders, sales.orders) and patterns (public.*, sales.order_*); each table is a "
      "stream of its own when there are several (CDC reads them all through one slot)",
      "through logical replication");
  spec.params.push_back({"slot", ParamType::kString, false, nullptr,
                         "CDC: the logical replication slot (default skippr_<pipeline>_<hash of the name>, one per "
                         "pipeline)"});
  spec.params.push_back(
      {"publication", ParamType::kString, false, nullptr,
       "CDC: the publication, created for the tables when missing and given the ones added to `tables` "
       "later (default as slot)"});
  spec.params.push_back({"primary_key_unique", ParamType::kBool, false, false,
                         "CDC: primary_key is unique although no unique index or primary key backs it (checked "
                         "while the snapshot is read)"});
  spec.params.push_back({"on_truncate", ParamType::kString, false, "apply",
                         "CDC: what a TRUNCATE of the table in the stream does: apply (a truncate row; merge_by_key "
                         "removes the older rows) | stop (exit 2, with the ways forward) | ignore (the destination "
                         "keeps the rows)"});
  // CDC of several tables merges each on its own primary key, and can read one of them again from a snapshot.
  spec.keys_streams = cdc_keys_streams;
  spec.resyncs_streams = spec.keys_streams;
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
    TableSelection selection{p.value("schema", std::string("public")), tables,
                             p.value("exclude_tables", std::vector<std::string>{})};
    if (tables.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("source '{}': tables is empty; name a table, several, or a pattern "
                                                  "such as public.*",
                                                  ctx.name));
    }
    if (selection.names_streams() && !ctx.primary_key.empty()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("source '{}': several tables are read, each keyed by its own primary key; the "
                              "pipeline's primary_key names one table's, so remove it",
                              ctx.name));
    }
    if (cdc) {
      return make_cdc_source(ctx, std::move(selection),
                             mode_text == "cdc_only" ? CdcMode::kCdcOnly : CdcMode::kSnapshotThenCdc);
    }
    const Mode mode = mode_text == "snapshot" ? Mode::kSnapshot : Mode::kIncremental;
    if (mode == Mode::kIncremental && cursor.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("source '{}': mode incremental needs cursor_column (a column that "
                                                  "grows with every change, e.g. updated_at); add it",
                                                  ctx.name));
    }
    return std::make_unique<PostgresSource>(ctx, std::move(selection), mode, cursor);
  };
  return spec;
}

}  // namespace skippr
