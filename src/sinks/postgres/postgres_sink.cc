#include "sinks/postgres/postgres_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

#include "clients/postgres/pg_client.h"
#include "core/failpoint.h"
#include "core/sync_mark.h"
#include "sinks/kit/batch_ledger.h"
#include "sinks/kit/conform_batch.h"
#include "sinks/kit/merge_sql.h"
#include "sinks/kit/replace_landing.h"
#include "sinks/kit/schema_evolution.h"
#include "sinks/kit/stream_tables.h"
#include "sinks/postgres/pg_copy_binary.h"
#include "sinks/postgres/pg_types.h"

namespace skippr {
namespace {

constexpr size_t kCopyChunkBytes = 4 << 20;  // bytes handed to libpq at a time: bounds the encoder's buffer
constexpr std::string_view kStageTable = "_skippr_stage";
constexpr std::string_view kLatestTable = "_skippr_latest";

// Postgres names are exact (the sink quotes every identifier); types as format_type() spells them.
ColumnRules pg_column_rules() {
  auto int_range = [](std::string_view type) -> std::optional<std::pair<int64_t, int64_t>> {
    if (type == "integer") return std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
    if (type == "smallint") return std::pair<int64_t, int64_t>{INT16_MIN, INT16_MAX};
    return std::nullopt;
  };
  return {[](std::string_view a, std::string_view b) { return a == b; },
          pg_column_accepts,
          pg_quote_identifier,
          int_range,
          pg_text_problem,
          pg_numeric_limit};
}

class PostgresSink final : public GroupLandingSink {
 public:
  PostgresSink(const ConnectorContext& ctx, std::string schema, StreamTables tables)
      : params_(ctx.params),
        what_(fmt::format("sink '{}'", ctx.name)),
        schema_(std::move(schema)),
        tables_(std::move(tables)),
        table_(tables_.table_for("")),
        merge_(ctx.landing == Landing::kMergeByKey),
        landing_(ctx.landing),
        pipeline_key_(ctx.primary_key),
        primary_key_(ctx.primary_key),
        partition_by_(ctx.partition_by),
        pipeline_(ctx.pipeline) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;

 private:
  std::string target() const { return pg_qualified(schema_, table_); }
  // Points table_ at the table `batch`'s stream lands in: every step of a landing then works on that table. kConfig
  // when another stream already landed there, or when the name is longer than PostgreSQL keeps.
  Status use_table_of(const Batch& batch);
  std::string refresh() const { return pg_qualified(schema_, pg_derived_name(table_, kRefreshSuffix)); }
  bool replacing_partitions() const { return landing_ == Landing::kReplacePartition; }
  bool refreshing() const { return landing_ == Landing::kReplaceTable; }
  // replace_table: the refresh table `mark`'s sync fills, made like the target (dropped first when another sync
  // left it); at the batch that ends the sync, its rows replace the target's (sinks/kit/replace_landing.h).
  Status begin_refresh(const SyncMark& mark);
  Status finish_refresh();
  std::string tombstones() const { return pg_qualified(schema_, pg_derived_name(table_, kTombstoneSuffix)); }
  std::string where() const { return fmt::format("{}: table {}", what_, target()); }
  Result<std::vector<TableColumn>> describe(const std::string& qualified);
  Status check_merge_key(const std::vector<TableColumn>& columns);
  // The batch has the key fields, no null key, and readable change fields.
  Status check_merge_rows(const Batch& batch) const;
  Result<std::vector<TableColumn>> prepare_table(const Batch& batch, const std::string& into);
  Status copy_rows(const Batch& batch, const std::string& into);
  Status stage_rows(const Batch& batch);
  // Append into columns of exactly the staging types needs no staging: the binary COPY goes into the target, in the
  // same transaction as the ledger row, which halves the server's work (bench/postgres.sh).
  bool copies_straight_into_target(const Batch& batch, const std::vector<TableColumn>& columns) const;
  Status apply_append(const Batch& batch, const std::vector<TableColumn>& columns, const std::string& into);
  Status apply_merge(const Batch& batch, const BatchId& id, const std::vector<TableColumn>& columns);
  Result<std::vector<BatchLanded>> write_in_transaction(std::span<const BatchToLand> group);
  // One batch of the group, inside its transaction: rows, rejects and ledger row. Returns the rows rejected.
  Result<uint64_t> land_batch(const BatchToLand& item);
  // A temp table lives until COMMIT, and a group stages one batch after another in the same transaction.
  Status drop_temp_table(std::string_view name) {
    return conn_->execute(fmt::format("DROP TABLE IF EXISTS pg_temp.{}", pg_quote_identifier(name)));
  }
  LedgerDialect ledger() const;
  Status prepare_ledger(PgConnection& conn);
  std::string cast_to_column(std::string_view alias, const std::string& field,
                             const std::vector<TableColumn>& columns) const;

  nlohmann::json params_;
  std::string what_;
  std::string schema_;
  StreamTables tables_;
  std::string table_;  // the table of the batch being landed (use_table_of)
  bool merge_;
  Landing landing_;
  std::vector<std::string> pipeline_key_;
  std::vector<std::string> primary_key_;   // merge_by_key: the key of the batch being landed (use_table_of)
  std::set<std::string> merge_checked_;    // per-stream tables whose key check_merge_key found (once each)
  std::vector<std::string> partition_by_;  // replace_partition's
  std::string pipeline_;
  std::optional<PgConnection> conn_;
};

Status PostgresSink::open() {
  if (conn_ && !conn_->broken()) return ok();
  conn_.reset();
  auto conn = PgConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  auto prefixed = [&](const Error& e) { return fail(e.kind, fmt::format("{}: {}", where(), e.message)); };
  // Created only when absent: CREATE SCHEMA checks the CREATE privilege on the database even with IF NOT EXISTS.
  auto schema_exists = conn->query("SELECT 1 FROM pg_namespace WHERE nspname = $1", {schema_});
  if (!schema_exists) return prefixed(schema_exists.error());
  if (schema_exists->rows.empty()) {
    if (auto st = conn->execute(fmt::format("CREATE SCHEMA IF NOT EXISTS {}", pg_quote_identifier(schema_))); !st) {
      return prefixed(st.error());
    }
  }
  if (auto st = prepare_ledger(*conn); !st) return prefixed(st.error());
  conn_ = std::move(*conn);
  if (merge_ && !tables_.per_stream()) {
    // A target that exists must be mergeable now, before anything is read: exit 2 rather than a stuck batch later.
    auto columns = describe(target());
    if (!columns) return prefixed(columns.error());
    if (!columns->empty()) SKIPPR_TRY(check_merge_key(*columns));
  }
  return ok();
}

LedgerDialect PostgresSink::ledger() const {
  return {pg_quote_identifier(schema_) + ".", "table_schema = " + pg_quote_literal(schema_), pg_quote_literal, "text",
          "bigint"};
}

// Creates the ledger, or brings one of the first format (one for every table of the schema, no positions) to the
// current one in a single transaction. Sinks of several pipelines may start at once: the migration takes the old
// table's lock and looks again; a loser's statements fail and its open is retried, finding the new format.
Status PostgresSink::prepare_ledger(PgConnection& conn) {
  const LedgerDialect d = ledger();
  auto format = [&]() -> Result<LedgerFormat> {
    auto rows = conn.query(ledger_columns_sql(d), {});
    if (!rows) return std::unexpected(rows.error());
    std::vector<std::string> names;
    for (const auto& row : rows->rows) names.push_back(row[0].value_or(""));
    return ledger_format(names);
  };
  auto before = format();
  if (!before) return std::unexpected(before.error());
  if (*before == LedgerFormat::kCurrent) return ok();
  if (*before == LedgerFormat::kAbsent) {
    auto st = conn.execute(ledger_create_sql(d));
    if (!st && conn.last_sqlstate() != "23505") return st;  // two first runs at once: the other one created it
    return ok();
  }
  PgTransaction tx(conn);
  SKIPPR_TRY(tx.begin());
  SKIPPR_TRY(conn.execute(
      fmt::format("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE", pg_qualified(schema_, std::string(kLedgerTable)))));
  auto now = format();
  if (!now) return std::unexpected(now.error());
  if (*now == LedgerFormat::kFirst) {
    for (const auto& sql : ledger_migrate_sql(d)) SKIPPR_TRY(conn.execute(sql));
  }
  return tx.commit();
}

Status PostgresSink::use_table_of(const Batch& batch) {
  std::string table = tables_.table_for(batch.stream);
  if (table.size() > kPgMaxNameBytes) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: stream '{}' would land in table {}, a name of {} bytes; PostgreSQL keeps at most {} "
                            "(it would cut it silently). Use a shorter table pattern",
                            what_, batch.stream, table, table.size(), kPgMaxNameBytes));
  }
  SKIPPR_TRY(tables_.claim(batch.stream, table, [](std::string_view name) { return std::string(name); }));
  table_ = std::move(table);
  primary_key_ = merge_key_of(batch, pipeline_key_);
  if (merge_ && primary_key_.empty()) return no_merge_key(batch, where());
  return ok();
}

Result<std::optional<LedgerTip>> PostgresSink::ledger_tip() {
  SKIPPR_TRY(open());
  auto rows = conn_->query(tables_.per_stream()
                               ? ledger_tip_any_table_sql(ledger(), tables_.target_like([this](std::string_view t) {
                                   return pg_qualified(schema_, t);
                                 }),
                                                          pipeline_)
                               : ledger_tip_sql(ledger(), target(), pipeline_),
                           {});
  if (!rows) return fail(rows.error().kind, fmt::format("reading the ledger of {}: {}", where(), rows.error().message));
  return ledger_tip_of(rows->rows);
}

Result<std::vector<TableColumn>> PostgresSink::describe(const std::string& qualified) {
  auto rows = conn_->query(
      "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = to_regclass($1) "
      "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
      {qualified});
  if (!rows) return std::unexpected(rows.error());
  std::vector<TableColumn> columns;
  for (auto& row : rows->rows) columns.push_back({row[0].value_or(""), row[1].value_or("")});
  return columns;
}

Status PostgresSink::check_merge_key(const std::vector<TableColumn>& columns) {
  for (const auto& key : primary_key_) {
    if (std::ranges::none_of(columns, [&](const TableColumn& c) { return c.name == key; })) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{} has no column {} named in the pipeline's primary_key; fix primary_key or the table",
                              where(), pg_quote_identifier(key)));
    }
  }
  auto sorted = primary_key_;
  std::ranges::sort(sorted);
  auto found = conn_->query(
      "SELECT 1 FROM pg_index i WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND "
      "(SELECT string_agg(a.attname::text, ',' ORDER BY a.attname::text) FROM pg_attribute a WHERE a.attrelid = "
      "i.indrelid AND a.attnum = ANY(i.indkey)) = $2",
      {target(), fmt::format("{}", fmt::join(sorted, ","))});
  if (!found) return fail(found.error().kind, fmt::format("{}: {}", where(), found.error().message));
  if (found->rows.empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} has no unique index on ({}), which merge_by_key needs; add one with ALTER TABLE {} ADD "
                            "PRIMARY KEY ({})",
                            where(), fmt::join(primary_key_, ", "), target(), fmt::join(primary_key_, ", ")));
  }
  return ok();
}

Result<std::vector<TableColumn>> PostgresSink::prepare_table(const Batch& batch, const std::string& into) {
  auto columns = describe(into);
  if (!columns) return columns;
  // A stream's table that exists must be mergeable on the stream's key (one table is checked at open).
  if (merge_ && tables_.per_stream() && !columns->empty() && !merge_checked_.contains(into)) {
    SKIPPR_TRY(check_merge_key(*columns));
    merge_checked_.insert(into);
  }
  if (columns->empty()) {
    std::vector<std::string> definition;
    for (const auto& field : batch.schema.fields) {
      if (is_change_field(field.name)) continue;
      definition.push_back(fmt::format("{} {}", pg_quote_identifier(field.name), pg_sql_type(field.type)));
    }
    if (definition.empty()) return columns;  // nothing to create a table from yet
    std::vector<std::string> keys;
    for (const auto& key : primary_key_) keys.push_back(pg_quote_identifier(key));
    if (merge_) {
      definition.push_back(fmt::format("{} numeric", pg_quote_identifier(kOrderColumn)));
      definition.push_back(fmt::format("PRIMARY KEY ({})", fmt::join(keys, ", ")));
    }
    SKIPPR_TRY(conn_->execute(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", into, fmt::join(definition, ", "))));
    return describe(into);
  }
  auto missing = fields_to_add(*columns, batch.schema, pg_column_rules(), where(), /*skip_change_fields=*/true);
  if (!missing) return std::unexpected(missing.error());
  bool altered = !missing->empty();
  for (const auto& field : *missing) {
    SKIPPR_TRY(conn_->execute(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", into, pg_quote_identifier(field.name),
                                          pg_sql_type(field.type))));
  }
  if (merge_ && std::ranges::none_of(*columns, [](const TableColumn& c) { return c.name == kOrderColumn; })) {
    SKIPPR_TRY(conn_->execute(
        fmt::format("ALTER TABLE {} ADD COLUMN {} numeric", target(), pg_quote_identifier(kOrderColumn))));
    altered = true;
  }
  if (altered) return describe(into);
  return columns;
}

const ReplaceDialect& pg_replace_dialect() {
  static const ReplaceDialect dialect{pg_quote_identifier, pg_quote_literal, /*jsonb_partition_keys=*/true};
  return dialect;
}

Status PostgresSink::begin_refresh(const SyncMark& mark) {
  auto columns = describe(refresh());
  if (!columns) return std::unexpected(columns.error());
  if (!columns->empty()) {
    auto leftover = conn_->query(refresh_leftover_sql(pg_replace_dialect(), refresh(), mark.sync_id), {});
    if (!leftover) return std::unexpected(leftover.error());
    if (leftover->rows.empty()) return ok();
    SKIPPR_TRY(conn_->execute(fmt::format("DROP TABLE {}", refresh())));  // a sync that never ended left it
  }
  auto target_columns = describe(target());
  if (!target_columns) return std::unexpected(target_columns.error());
  if (target_columns->empty()) return ok();  // made from the first batch, as the target would be
  SKIPPR_TRY(conn_->execute(fmt::format("CREATE TABLE {} (LIKE {})", refresh(), target())));
  if (std::ranges::none_of(*target_columns, [](const TableColumn& c) { return c.name == kSyncColumn; })) {
    SKIPPR_TRY(
        conn_->execute(fmt::format("ALTER TABLE {} ADD COLUMN {} text", refresh(), pg_quote_identifier(kSyncColumn))));
  }
  return ok();
}

Status PostgresSink::finish_refresh() {
  auto refresh_columns = describe(refresh());
  if (!refresh_columns) return std::unexpected(refresh_columns.error());
  auto target_columns = describe(target());
  if (!target_columns) return std::unexpected(target_columns.error());
  if (refresh_columns->empty()) {
    // The sync read nothing: the refreshed table is empty.
    if (!target_columns->empty()) SKIPPR_TRY(conn_->execute(fmt::format("DELETE FROM {}", target())));
    return ok();
  }
  for (const auto& sql : refresh_swap_sql(pg_replace_dialect(), target(), refresh(), *refresh_columns, *target_columns,
                                          pg_column_rules())) {
    SKIPPR_TRY(conn_->execute(sql));
  }
  return ok();
}

Status PostgresSink::copy_rows(const Batch& batch, const std::string& into) {
  SKIPPR_TRY(conn_->copy_start(fmt::format("COPY {} FROM STDIN (FORMAT binary)", into)));
  PgCopyBinaryWriter writer(merge_);
  constexpr size_t kRowsPerStep = 4096;
  for (size_t first = 0; first < batch.rows; first += kRowsPerStep) {
    writer.append_rows(batch, first, std::min(batch.rows, first + kRowsPerStep));
    if (writer.buffer().size() >= kCopyChunkBytes) {
      SKIPPR_TRY(conn_->copy_put(writer.buffer()));
      writer.buffer().clear();
    }
  }
  writer.append_trailer();
  SKIPPR_TRY(conn_->copy_put(writer.buffer()));
  return conn_->copy_finish();
}

Status PostgresSink::stage_rows(const Batch& batch) {
  std::vector<std::string> definition;
  for (const auto& field : batch.schema.fields) {
    definition.push_back(fmt::format("{} {}", pg_quote_identifier(field.name), pg_sql_type(field.type)));
  }
  if (merge_) definition.push_back("_skippr_row bigint");
  SKIPPR_TRY(drop_temp_table(kStageTable));
  SKIPPR_TRY(conn_->execute(fmt::format("CREATE TEMP TABLE {} ({}) ON COMMIT DROP", pg_quote_identifier(kStageTable),
                                        fmt::join(definition, ", "))));
  return copy_rows(batch, pg_quote_identifier(kStageTable));
}

bool PostgresSink::copies_straight_into_target(const Batch& batch, const std::vector<TableColumn>& columns) const {
  if (merge_) return false;
  return std::ranges::all_of(batch.schema.fields, [&](const Field& field) {
    auto column = std::ranges::find_if(columns, [&](const TableColumn& c) { return c.name == field.name; });
    return column != columns.end() && column->type == pg_sql_type(field.type);
  });
}

std::string PostgresSink::cast_to_column(std::string_view alias, const std::string& field,
                                         const std::vector<TableColumn>& columns) const {
  // A field the table lacks is left uncast: the statement then fails with Postgres' own "column does not exist"
  // rather than this process reading past the list.
  const TableColumn* column = find_column(columns, field, pg_column_rules());
  if (!column) return fmt::format("{}.{}", alias, pg_quote_identifier(field));
  return fmt::format("CAST({}.{} AS {})", alias, pg_quote_identifier(field), column->type);
}

Status PostgresSink::apply_append(const Batch& batch, const std::vector<TableColumn>& columns,
                                  const std::string& into) {
  std::vector<std::string> names, values;
  for (const auto& field : batch.schema.fields) {
    if (is_change_field(field.name)) continue;
    names.push_back(pg_quote_identifier(field.name));
    values.push_back(cast_to_column("s", field.name, columns));
  }
  return conn_->execute(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} s", into, fmt::join(names, ", "),
                                    fmt::join(values, ", "), pg_quote_identifier(kStageTable)));
}

Status PostgresSink::apply_merge(const Batch& batch, const BatchId& id, const std::vector<TableColumn>& columns) {
  std::vector<std::string> keys;
  for (const auto& key : primary_key_) keys.push_back(pg_quote_identifier(key));
  // The order token: the source's (the LSN for CDC), else the batch's place in the pipeline then the row's in the
  // batch, so a later batch always wins (a new epoch after RESET included).
  const std::string token =
      batch.schema.index_of(kOrderField) >= 0
          ? fmt::format("s.{}::numeric", pg_quote_identifier(kOrderField))
          : fmt::format("(({}::numeric * 1099511627776 + {}) * 4294967296 + s._skippr_row)", id.epoch, id.seq);
  const std::string is_delete = batch.schema.index_of(kOpField) >= 0
                                    ? fmt::format("coalesce(s.{} = 'delete', false)", pg_quote_identifier(kOpField))
                                    : "false";
  // A truncate (the CDC source's "every row older than this token is gone": a streamed TRUNCATE, or the end of a
  // snapshot) empties the target of older rows first; rows of the batch older than it are dropped too.
  std::string after_truncate;
  if (has_truncates(batch)) {
    const std::string truncate_token =
        fmt::format("(SELECT max(z.{0}::numeric) FROM {1} z WHERE z.{2} = '{3}')", pg_quote_identifier(kOrderField),
                    pg_quote_identifier(kStageTable), pg_quote_identifier(kOpField), kTruncateOp);
    SKIPPR_TRY(conn_->execute(
        fmt::format("DELETE FROM {} WHERE {} < {}", target(), pg_quote_identifier(kOrderColumn), truncate_token)));
    after_truncate = fmt::format(" WHERE s.{} IS DISTINCT FROM '{}' AND {} >= {}", pg_quote_identifier(kOpField),
                                 kTruncateOp, token, truncate_token);
  }
  // The newest change per key only: one statement must not touch a row twice.
  SKIPPR_TRY(drop_temp_table(kLatestTable));
  SKIPPR_TRY(conn_->execute(fmt::format(
      "CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT DISTINCT ON ({}) s.*, {} AS _skippr_token, {} AS _skippr_delete "
      "FROM {} s{} ORDER BY {}, {} DESC",
      pg_quote_identifier(kLatestTable), fmt::join(keys, ", "), token, is_delete, pg_quote_identifier(kStageTable),
      after_truncate, fmt::join(keys, ", "), token)));

  std::vector<std::string> key_match, tomb_match;
  for (const auto& key : keys) {
    key_match.push_back(fmt::format("t.{} = l.{}", key, key));
    tomb_match.push_back(fmt::format("d.{} = l.{}", key, key));
  }
  const std::string order = pg_quote_identifier(kOrderColumn);
  std::vector<std::string> names, values, updates;
  for (const auto& field : batch.schema.fields) {
    if (is_change_field(field.name)) continue;
    names.push_back(pg_quote_identifier(field.name));
    values.push_back(cast_to_column("l", field.name, columns));
    if (std::ranges::find(primary_key_, field.name) == primary_key_.end()) {
      updates.push_back(fmt::format("{} = EXCLUDED.{}", names.back(), names.back()));
    }
  }
  updates.push_back(fmt::format("{} = EXCLUDED.{}", order, order));

  // Tombstones first exist for this table's keys (created with the target's key types).
  std::vector<std::string> tomb_columns;
  for (const auto& key : primary_key_) {
    const TableColumn* column = find_column(columns, key, pg_column_rules());  // check_merge_key found each one
    if (!column) return fail(ErrorKind::kInternal, fmt::format("{}: key column {} vanished", where(), key));
    tomb_columns.push_back(fmt::format("{} {}", pg_quote_identifier(key), column->type));
  }
  SKIPPR_TRY(conn_->execute(fmt::format("CREATE TABLE IF NOT EXISTS {} ({}, {} numeric NOT NULL, PRIMARY KEY ({}))",
                                        tombstones(), fmt::join(tomb_columns, ", "), order, fmt::join(keys, ", "))));

  // Upserts: never over a newer row, never over a newer tombstone.
  SKIPPR_TRY(conn_->execute(fmt::format(
      "INSERT INTO {} AS t ({}, {}) SELECT {}, l._skippr_token FROM {} l WHERE NOT l._skippr_delete AND NOT EXISTS "
      "(SELECT 1 FROM {} d WHERE {} AND d.{} >= l._skippr_token) ON CONFLICT ({}) DO UPDATE SET {} WHERE t.{} IS "
      "NULL OR t.{} < EXCLUDED.{}",
      target(), fmt::join(names, ", "), order, fmt::join(values, ", "), pg_quote_identifier(kLatestTable), tombstones(),
      fmt::join(tomb_match, " AND "), order, fmt::join(keys, ", "), fmt::join(updates, ", "), order, order, order)));
  // Deletes: remove an older row, and remember the delete so an older insert arriving late stays deleted.
  SKIPPR_TRY(conn_->execute(fmt::format(
      "DELETE FROM {} t USING {} l WHERE l._skippr_delete AND {} AND (t.{} IS NULL OR t.{} < l._skippr_token)",
      target(), pg_quote_identifier(kLatestTable), fmt::join(key_match, " AND "), order, order)));
  std::vector<std::string> key_values;
  for (const auto& key : primary_key_) key_values.push_back(cast_to_column("l", key, columns));
  return conn_->execute(fmt::format(
      "INSERT INTO {} AS d ({}, {}) SELECT {}, l._skippr_token FROM {} l WHERE l._skippr_delete ON CONFLICT ({}) DO "
      "UPDATE SET {} = EXCLUDED.{} WHERE d.{} < EXCLUDED.{}",
      tombstones(), fmt::join(keys, ", "), order, fmt::join(key_values, ", "), pg_quote_identifier(kLatestTable),
      fmt::join(keys, ", "), order, order, order, order));
}

Status PostgresSink::check_merge_rows(const Batch& batch) const {
  std::vector<size_t> key_fields;
  for (const auto& key : primary_key_) {
    const int field = batch.schema.index_of(key);
    if (field < 0) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: the batch has no field {} named in the pipeline's primary_key; fix primary_key",
                              where(), pg_quote_identifier(key)));
    }
    key_fields.push_back(static_cast<size_t>(field));
  }
  return check_change_fields(batch, key_fields, where());
}

Result<std::vector<BatchLanded>> PostgresSink::write_group(std::span<const BatchToLand> group) {
  for (const auto& item : group) {
    SKIPPR_TRY(item.batch.check_shape());  // text it cannot hold is rejected row by row (pg_text_problem)
    if (merge_) {
      SKIPPR_TRY(use_table_of(item.batch));
      SKIPPR_TRY(check_merge_rows(item.batch));
    }
    if (replacing_partitions() || refreshing()) SKIPPR_TRY(check_sync_field(item.batch, where()));
  }
  SKIPPR_TRY(open());
  auto landed = write_in_transaction(group);
  if (!landed && conn_->broken()) conn_.reset();  // the next attempt reconnects
  return landed;
}

Result<std::vector<BatchLanded>> PostgresSink::write_in_transaction(std::span<const BatchToLand> group) {
  // Before COMMIT a failure is definite (the server rolls the transaction back), except a lost connection, which
  // is reported as an unknown outcome: the engine then retries the same BatchIds only, and the ledger decides.
  auto failed = [&](const Error& e) { return fail(conn_->broken() ? ErrorKind::kUnknownOutcome : e.kind, e.message); };
  PgTransaction tx(*conn_);
  if (auto st = tx.begin(); !st) {
    return failed({st.error().kind, fmt::format("writing to {}: {}", where(), st.error().message)});
  }
  auto has = [&](const BatchToLand& item) -> Result<bool> {
    SKIPPR_TRY(use_table_of(item.batch));
    auto applied = conn_->query(ledger_has_sql(ledger(), target(), item.id), {});
    if (!applied) return std::unexpected(applied.error());
    return !applied->rows.empty();
  };
  auto landed = land_new_batches(group, has, [&](const BatchToLand& item) { return land_batch(item); });
  if (!landed) return failed(landed.error());
  if (all_already_applied(*landed)) return landed;  // tx rolls back
  if (auto st = tx.commit(); !st) {
    if (conn_->broken()) {
      return fail(ErrorKind::kUnknownOutcome,
                  fmt::format("committing batch{} {} to {}: {}", group.size() == 1 ? "" : "es", group_ids(group),
                              where(), st.error().message));
    }
    return failed(st.error());  // the server answered: the commit failed and nothing was applied
  }
  return landed;
}

Result<uint64_t> PostgresSink::land_batch(const BatchToLand& item) {
  SKIPPR_TRY(use_table_of(item.batch));
  const BatchId& id = item.id;
  auto failed = [&](const Error& e) {
    if (conn_->last_sqlstate() == "54011") {
      return fail(e.kind, fmt::format("writing batch {} to {}: {} fields, and a Postgres table holds at most 1,600 "
                                      "columns (dropped ones count too); leave fields out at the source, or land "
                                      "them in another sink: {}",
                                      id.str(), where(), item.batch.schema.fields.size(), e.message));
    }
    return fail(e.kind, fmt::format("writing batch {} to {}: {}", id.str(), where(), e.message));
  };
  // A replace landing's rows carry their sync; replace_table writes them to the refresh table.
  const SyncMark mark = sync_mark_of(item.position_after, id);
  std::optional<Batch> widened;
  if (replacing_partitions()) {
    auto filled = with_partition_fields(
        item.batch, partition_by_, [&] { return describe(target()); }, pg_column_rules());
    if (!filled) return failed(filled.error());
    widened = std::move(*filled);
  }
  const Batch& read = widened ? *widened : item.batch;
  std::optional<Batch> tagged;
  if ((replacing_partitions() || refreshing()) && read.rows > 0) tagged = with_sync_column(read, mark.sync_id);
  const Batch& batch = tagged ? *tagged : read;
  const std::string into = refreshing() ? refresh() : target();
  if (refreshing()) {
    if (auto begun = begin_refresh(mark); !begun) return failed(begun.error());
  }
  auto columns = prepare_table(batch, into);
  if (!columns) return failed(columns.error());
  // Values of another type than their column's are converted, or their rows rejected (kept in the rejects table).
  auto conformed = conform_batch(batch, *columns, pg_column_rules(), where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : batch;
  if (rows.rows > 0 && copies_straight_into_target(rows, *columns)) {
    std::vector<std::string> names;
    for (const auto& field : rows.schema.fields) names.push_back(pg_quote_identifier(field.name));
    if (auto st = copy_rows(rows, fmt::format("{} ({})", into, fmt::join(names, ", "))); !st) {
      return failed(st.error());
    }
  } else if (rows.rows > 0) {
    if (auto st = stage_rows(rows); !st) return failed(st.error());
    if (auto st = merge_ ? apply_merge(rows, id, *columns) : apply_append(rows, *columns, into); !st) {
      return failed(st.error());
    }
  }
  if (rows.rows > 0 && replacing_partitions()) {
    if (auto st = conn_->execute(replace_partitions_sql(pg_replace_dialect(), target(), partition_by_, mark.sync_id));
        !st) {
      return failed(st.error());
    }
  }
  const size_t rejected = *conformed ? (*conformed)->rejected.size() : 0;
  if (rejected > 0) {
    const std::string rejects = pg_qualified(schema_, pg_derived_name(table_, kRejectedSuffix));
    if (auto st = conn_->execute(rejects_create_sql(rejects, "text")); !st) return failed(st.error());
    for (const auto& sql : rejects_insert_sql(rejects, id.str(), (*conformed)->rejected, pg_quote_literal)) {
      if (auto st = conn_->execute(sql); !st) return failed(st.error());
    }
  }
  if (refreshing() && mark.ends_sync) {
    if (auto st = finish_refresh(); !st) return failed(st.error());
  }
  failpoint::hit(failpoint::kSinkInTransaction);
  auto recorded = conn_->execute(ledger_insert_sql(ledger(), target(), id, rows.rows, item.position_after));
  if (!recorded) {
    // Another writer landed the same batch between our check and now; its transaction won, and ours (the whole
    // group) rolls back. A retry finds the batch in the ledger.
    if (conn_->last_sqlstate() == "23505") {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("batch {} was landed in {} by another writer meanwhile; retried", id.str(), where()));
    }
    return failed(recorded.error());
  }
  return rejected;
}

}  // namespace

ConnectorSpec postgres_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Postgres";
  spec.is_source = false;
  spec.summary = "a PostgreSQL table (binary COPY, one transaction per batch)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;
  spec.max_identifier_bytes = kPgMaxNameBytes;  // PostgreSQL cuts longer names to NAMEDATALEN - 1 = 63 bytes, silently
  spec.params = pg_connection_params();
  spec.params.push_back({"schema", ParamType::kString, false, "public", "the target's schema; created when absent"});
  spec.params.push_back(
      {"table", ParamType::kString, false, nullptr,
       "the target table; created from the first batch's schema. With a source of several streams, {stream} in it is "
       "each stream's name: raw_{stream}, or {stream} for the name alone (the default then)"});
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SKIPPR_TRY(check_pg_connection_params(ctx.params, fmt::format("sink '{}'", ctx.name)));
    if (ctx.landing == Landing::kMergeByKey && ctx.primary_key.empty() && !ctx.source_keys) {
      return fail(ErrorKind::kConfig,
                  fmt::format("sink '{}': merge_by_key needs the pipeline's primary_key; add it", ctx.name));
    }
    auto tables = StreamTables::make(fmt::format("sink '{}'", ctx.name), "table",
                                     StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    const std::string table = StreamTables::given(ctx.params, "table").value_or(std::string(kStreamPlaceholder));
    const std::string schema = ctx.params.value("schema", std::string("public"));
    if (schema.empty()) return fail(ErrorKind::kConfig, fmt::format("sink '{}': schema is empty", ctx.name));
    for (const auto& [what, name] : {std::pair{"table", table}, std::pair{"schema", schema}}) {
      if (name.size() > kPgMaxNameBytes) {
        return fail(ErrorKind::kConfig, fmt::format("sink '{}': the {} name is {} bytes; PostgreSQL names hold at "
                                                    "most {} (it would cut it silently), so choose a shorter one",
                                                    ctx.name, what, name.size(), kPgMaxNameBytes));
      }
    }
    return std::make_unique<PostgresSink>(ctx, schema, std::move(*tables));
  };
  return spec;
}

}  // namespace skippr
