#include "sinks/duckdb/duckdb_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include "clients/duckdb/duckdb_client.h"
#include "core/ascii.h"
#include "core/change_fields.h"
#include "core/failpoint.h"
#include "core/redact.h"
#include "core/sync_mark.h"
#include "sinks/duckdb/duckdb_memory.h"
#include "sinks/duckdb/duckdb_memory_probe.h"
#include "sinks/duckdb/duckdb_merge.h"
#include "sinks/duckdb/duckdb_types.h"
#include "sinks/kit/batch_ledger.h"
#include "sinks/kit/conform_batch.h"
#include "sinks/kit/replace_landing.h"
#include "sinks/kit/schema_evolution.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {

namespace {

class DuckDbSink final : public GroupLandingSink {
 public:
  DuckDbSink(DuckDbTarget target, StreamTables tables, const ConnectorContext& ctx)
      : path_(target.path),
        target_(std::move(target)),
        tables_(std::move(tables)),
        pipeline_(ctx.pipeline),
        landing_(ctx.landing),
        pipeline_key_(ctx.primary_key),
        merge_key_(ctx.primary_key),
        partition_by_(ctx.partition_by),
        memory_(target_.max_memory_bytes, ctx.name) {
    point_at(tables_.table_for(""));
  }

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;
  // Closes the database between landings, so other processes can open the file (DuckDB locks it while it is
  // open); the next write opens it again. A database reached through an extension (MotherDuck) stays connected.
  void idle() override {
    if (!target_.local_file) return;
    conn_.reset();
    db_.reset();
  }

 private:
  bool merging() const { return landing_ == Landing::kMergeByKey; }
  bool replacing_partitions() const { return landing_ == Landing::kReplacePartition; }
  bool refreshing() const { return landing_ == Landing::kReplaceTable; }
  // DuckDB's names are case-insensitive, so the ledger scopes its rows by the lowercase table name.
  std::string ledger_target() const;
  // Points table_ (and refresh_table_) at the table `batch`'s stream lands in: every step of a landing then works
  // on that table. kConfig when another stream already landed there.
  Status use_table_of(const Batch& batch);
  void point_at(std::string table);  // table_ and refresh_table_
  Status prepare_ledger();
  Result<bool> ledger_has(const BatchToLand& item);
  Result<std::vector<TableColumn>> describe_table(const std::string& table);
  // merge_by_key into an existing table: every key column must be there (exit 2 at open, before anything is read).
  Status check_merge_key(const std::vector<TableColumn>& columns) const;
  // Creates the table, or adds the batch's new fields as nullable columns; a changed type is an error. Merging adds
  // the order column too.
  Result<std::vector<TableColumn>> prepare_table(const Batch& batch, const std::string& table);
  // replace_table: the refresh table `mark`'s sync fills, made like the target (dropped first when another sync
  // left it); at the batch that ends the sync, its rows replace the target's (sinks/kit/replace_landing.h).
  Status begin_refresh(const SyncMark& mark);
  Status finish_refresh();
  // Appends the batch to `table` by column name (a column the batch lacks is NULL); with `row_numbers` the last
  // column gets each row's index in the batch instead.
  Status append_rows(const Batch& batch, const std::string& table, const std::vector<TableColumn>& columns,
                     bool row_numbers = false);
  Status merge_rows(const Batch& batch, const BatchId& id, const std::vector<TableColumn>& columns);
  Result<std::vector<BatchLanded>> write_in_transaction(std::span<const BatchToLand> group);
  // One batch of the group, inside its transaction: rows, rejects and ledger row. Returns the rows rejected.
  Result<uint64_t> land_batch(const BatchToLand& item);

  std::string where() const { return fmt::format("DuckDB table {} in {}", quote_identifier(table_), path_); }

  std::string path_;
  DuckDbTarget target_;
  StreamTables tables_;
  std::string table_;          // the table of the batch being landed (use_table_of)
  std::string refresh_table_;  // replace_table's
  std::string pipeline_;
  Landing landing_;
  std::vector<std::string> pipeline_key_;  // the pipeline's primary_key
  std::vector<std::string> merge_key_;     // merge_by_key: the key of the batch being landed (use_table_of)
  std::vector<std::string> partition_by_;  // replace_partition's
  // The target's columns as this transaction left them: a group's later batches of the same shape skip describing
  // the table again (every change to it inside the transaction goes through prepare_table). Reset per transaction.
  std::optional<std::vector<TableColumn>> columns_in_transaction_;
  std::string columns_of_table_;  // the table columns_in_transaction_ describes
  DuckDbMemoryLimit memory_;      // raised for a landing into a wide table (duckdb_memory.h)
  // Declared in this order so the connection closes before the database.
  std::optional<DuckDbDatabase> db_;
  std::optional<DuckDbConnection> conn_;
};

Status DuckDbSink::open() {
  if (conn_) return ok();
  std::error_code ec;
  if (target_.local_file) std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  if (ec) {
    return fail(ErrorKind::kConfig,
                fmt::format("cannot create the folder of the DuckDB database {}: {}", path_, ec.message()));
  }
  auto settings = kAppendingSinkSettings;
  // An append never deletes, so checkpoint vacuuming has nothing to reclaim; what it did instead was merge the row
  // groups each small transaction left behind, decompressing and compressing them again at every automatic
  // checkpoint (perf: VacuumTask ~22 % of the lander). Off, 19 transactions of 21,000 JSON rows took 3.4 s instead of
  // 7.4 s, and the JSON lines bench went from 2.7x to 1.85x DuckDB's own read_json. merge_by_key deletes the rows
  // it replaces and keeps vacuuming, so their space comes back.
  if (landing_ == Landing::kAppend) settings.emplace_back("max_vacuum_tasks", "0");
  settings.insert(settings.end(), target_.settings.begin(), target_.settings.end());
  auto db = DuckDbDatabase::open(path_, settings);
  const bool replay_needs_memory = !db && db.error().message.find("Out of Memory") != std::string::npos;
  if (replay_needs_memory) {
    // Opening replays DuckDB's own WAL, and a wide landing that a crash stopped before its checkpoint needs as much
    // memory to replay as it needed to land: the database opens under max_memory_bytes, then checkpoints and goes
    // back to the usual limit (DuckDbMemoryLimit::lower).
    spdlog::info(
        "{}: replaying DuckDB's WAL needs more than the usual memory; opening it under max_memory_bytes ({} "
        "MiB)",
        path_, memory_.max_mib());
    for (auto& [name, value] : settings) {
      if (name == "memory_limit") value = fmt::format("{}MiB", memory_.max_mib());
    }
    db = DuckDbDatabase::open(path_, settings);
  }
  if (!db) {
    // A lock held by another process, a full disk, a permission being fixed, a service out of reach: all of these
    // can go away, so the engine retries; the reason (with the lock holder's PID) tells the user what to look at.
    return fail(
        ErrorKind::kUnavailable,
        redact(fmt::format("cannot open the DuckDB database {}: {}", path_, db.error().message), target_.secrets));
  }
  auto conn = DuckDbConnection::connect(*db);
  if (!conn) {
    return fail(ErrorKind::kUnavailable, redact(fmt::format("{}: {}", path_, conn.error().message), target_.secrets));
  }
  db_ = std::move(*db);
  conn_ = std::move(*conn);
  memory_.opened(replay_needs_memory ? memory_.max_mib() : kAppendingSinkMemoryMiB);
  memory_.lower(*conn_);
  if (auto prepared = prepare_ledger(); !prepared) {
    conn_.reset();
    db_.reset();
    return fail(ErrorKind::kUnavailable, fmt::format("cannot prepare the ledger table {} in {}: {}", kLedgerTable,
                                                     path_, prepared.error().message));
  }
  if (merging() && !tables_.per_stream()) {
    point_at(tables_.table_for(""));
    auto columns = describe_table(table_);
    if (!columns) return fail(columns.error().kind, fmt::format("{}: {}", where(), columns.error().message));
    if (!columns->empty()) SKIPPR_TRY(check_merge_key(*columns));
  }
  return ok();
}

Status DuckDbSink::check_merge_key(const std::vector<TableColumn>& columns) const {
  for (const auto& key : merge_key_) {
    if (!find_column(columns, key, duckdb_column_rules())) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{} has no column {} named in the pipeline's primary_key; fix primary_key or the table",
                              where(), quote_identifier(key)));
    }
  }
  return ok();
}

const LedgerDialect& duckdb_ledger() {
  static const LedgerDialect dialect{"", "table_catalog = current_database() AND table_schema = current_schema()",
                                     quote_literal, "VARCHAR", "UBIGINT"};
  return dialect;
}

std::string DuckDbSink::ledger_target() const { return ascii_lowercase(table_); }

Status DuckDbSink::use_table_of(const Batch& batch) {
  std::string table = tables_.table_for(batch.stream);
  SKIPPR_TRY(tables_.claim(batch.stream, table, ascii_lowercase));
  point_at(std::move(table));
  merge_key_ = merge_key_of(batch, pipeline_key_);
  if (merging() && merge_key_.empty()) return no_merge_key(batch, where());
  return ok();
}

void DuckDbSink::point_at(std::string table) {
  table_ = std::move(table);
  refresh_table_ = table_ + std::string(kRefreshSuffix);
}

// Creates the ledger, or brings one of the first format (shared by every table of the file, no positions) to the
// current one in a single transaction; a crash in between leaves the old one as it was.
Status DuckDbSink::prepare_ledger() {
  auto columns = conn_->query(ledger_columns_sql(duckdb_ledger()));
  if (!columns) return std::unexpected(columns.error());
  std::vector<std::string> names;
  for (const auto& row : columns->rows) names.push_back(row[0].value_or(""));
  switch (ledger_format(names)) {
    case LedgerFormat::kCurrent:
      return ok();
    case LedgerFormat::kAbsent:
      return conn_->execute(ledger_create_sql(duckdb_ledger()));
    case LedgerFormat::kFirst: {
      auto tx = DuckDbTransaction::begin(*conn_);
      if (!tx) return std::unexpected(tx.error());
      for (const auto& sql : ledger_migrate_sql(duckdb_ledger())) SKIPPR_TRY(conn_->execute(sql));
      // Old rows name the table as it was written; the current format keys them by the lowercase name.
      SKIPPR_TRY(conn_->execute(
          fmt::format("UPDATE {} SET target_table = lower(target_table)", quote_identifier(kLedgerTable))));
      return tx->commit();
    }
  }
  return ok();
}

Result<bool> DuckDbSink::ledger_has(const BatchToLand& item) {
  SKIPPR_TRY(use_table_of(item.batch));
  auto found = conn_->query(ledger_has_sql(duckdb_ledger(), ledger_target(), item.id));
  if (!found) return std::unexpected(found.error());
  return !found->rows.empty();
}

Result<std::optional<LedgerTip>> DuckDbSink::ledger_tip() {
  SKIPPR_TRY(open());
  point_at(tables_.table_for(""));
  auto rows = conn_->query(
      tables_.per_stream()
          ? ledger_tip_any_table_sql(
                duckdb_ledger(), tables_.target_like([](std::string_view t) { return ascii_lowercase(t); }), pipeline_)
          : ledger_tip_sql(duckdb_ledger(), ledger_target(), pipeline_));
  if (!rows) return fail(rows.error().kind, fmt::format("reading the ledger of {}: {}", where(), rows.error().message));
  return ledger_tip_of(rows->rows);
}

Result<std::vector<TableColumn>> DuckDbSink::describe_table(const std::string& table) {
  auto rows = conn_->query(fmt::format(
      "SELECT column_name, data_type FROM information_schema.columns WHERE table_catalog = current_database() AND "
      "table_schema = current_schema() AND lower(table_name) = lower({}) ORDER BY ordinal_position",
      quote_literal(table)));
  if (!rows) return std::unexpected(rows.error());
  std::vector<TableColumn> columns;
  for (auto& row : rows->rows) columns.push_back({row[0].value_or(""), row[1].value_or("")});
  return columns;
}

Result<std::vector<TableColumn>> DuckDbSink::prepare_table(const Batch& batch, const std::string& table) {
  auto columns = columns_in_transaction_ && columns_of_table_ == table
                     ? Result<std::vector<TableColumn>>(*columns_in_transaction_)
                     : describe_table(table);
  if (!columns) return columns;
  if (merging() && !columns->empty()) SKIPPR_TRY(check_merge_key(*columns));
  auto fields = fields_to_add(*columns, batch.schema, duckdb_column_rules(), where(), merging());
  if (!fields) return std::unexpected(fields.error());
  std::vector<std::string> new_columns;
  for (const auto& field : *fields) {
    new_columns.push_back(fmt::format("{} {}", quote_identifier(field.name), duckdb_sql_type(field.type)));
  }
  // merge_by_key keeps each row's order token; a batch without fields creates no table yet.
  const bool table_has_columns = !columns->empty() || !new_columns.empty();
  if (merging() && table_has_columns && !find_column(*columns, kOrderColumn, duckdb_column_rules())) {
    new_columns.push_back(fmt::format("{} HUGEINT", quote_identifier(kOrderColumn)));
  }
  if (new_columns.empty()) {
    columns_in_transaction_ = *columns;
    columns_of_table_ = table;
    return columns;
  }
  columns_in_transaction_.reset();
  if (columns->empty()) {
    SKIPPR_TRY(
        conn_->execute(fmt::format("CREATE TABLE {} ({})", quote_identifier(table), fmt::join(new_columns, ", "))));
  } else {
    for (const auto& column : new_columns) {
      SKIPPR_TRY(conn_->execute(fmt::format("ALTER TABLE {} ADD COLUMN {}", quote_identifier(table), column)));
    }
  }
  auto described = describe_table(table);  // DuckDB's own spelling of the types
  if (described) {
    columns_in_transaction_ = *described;
    columns_of_table_ = table;
  }
  return described;
}

const ReplaceDialect& duckdb_replace_dialect() {
  static const ReplaceDialect dialect{quote_identifier, quote_literal, /*jsonb_partition_keys=*/false};
  return dialect;
}

Status DuckDbSink::begin_refresh(const SyncMark& mark) {
  auto refresh = describe_table(refresh_table_);
  if (!refresh) return std::unexpected(refresh.error());
  const std::string quoted = quote_identifier(refresh_table_);
  if (!refresh->empty()) {
    auto leftover = conn_->query(refresh_leftover_sql(duckdb_replace_dialect(), quoted, mark.sync_id));
    if (!leftover) return std::unexpected(leftover.error());
    if (leftover->rows.empty()) return ok();
    SKIPPR_TRY(conn_->execute(fmt::format("DROP TABLE {}", quoted)));  // a sync that never ended left it
  }
  columns_in_transaction_.reset();
  auto target = describe_table(table_);
  if (!target) return std::unexpected(target.error());
  if (target->empty()) return ok();  // made from the first batch, as the target would be
  SKIPPR_TRY(
      conn_->execute(fmt::format("CREATE TABLE {} AS SELECT * FROM {} LIMIT 0", quoted, quote_identifier(table_))));
  if (!find_column(*target, kSyncColumn, duckdb_column_rules())) {
    SKIPPR_TRY(
        conn_->execute(fmt::format("ALTER TABLE {} ADD COLUMN {} VARCHAR", quoted, quote_identifier(kSyncColumn))));
  }
  return ok();
}

Status DuckDbSink::finish_refresh() {
  columns_in_transaction_.reset();
  auto refresh = describe_table(refresh_table_);
  if (!refresh) return std::unexpected(refresh.error());
  auto target = describe_table(table_);
  if (!target) return std::unexpected(target.error());
  // The swap reads the refresh table while it appends to the target.
  SKIPPR_TRY(memory_.fit(*conn_, std::max(refresh->size(), target->size()), 2, where()));
  if (refresh->empty()) {
    // The sync read nothing: the refreshed table is empty.
    if (!target->empty()) SKIPPR_TRY(conn_->execute(fmt::format("DELETE FROM {}", quote_identifier(table_))));
    return ok();
  }
  for (const auto& sql : refresh_swap_sql(duckdb_replace_dialect(), quote_identifier(table_),
                                          quote_identifier(refresh_table_), *refresh, *target, duckdb_column_rules())) {
    SKIPPR_TRY(conn_->execute(sql));
  }
  return ok();
}

Status DuckDbSink::append_rows(const Batch& batch, const std::string& table, const std::vector<TableColumn>& columns,
                               bool row_numbers) {
  // Where each table column comes from in the batch (-1: absent, stays NULL).
  std::vector<int> source(columns.size(), -1);
  for (size_t c = 0; c < columns.size(); ++c) {
    for (size_t f = 0; f < batch.schema.fields.size(); ++f) {
      if (duckdb_same_identifier(columns[c].name, batch.schema.fields[f].name)) source[c] = static_cast<int>(f);
    }
  }
  if (row_numbers) source.back() = -1;
  // Every string is valid UTF-8 here: conform_batch rejected the rows that were not (duckdb_text_problem), and the
  // change fields were checked to be insert/update/delete/truncate and digits.

  auto appender = DuckDbAppender::create(*conn_, table);
  if (!appender) return std::unexpected(appender.error());
  if (appender->column_count() != columns.size()) {
    return fail(ErrorKind::kUnavailable, fmt::format("{} changed while being written to", where()));
  }
  std::vector<duckdb_logical_type> types(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) types[c] = appender->column_type(c);
  duckdb_data_chunk chunk = duckdb_create_data_chunk(types.data(), types.size());
  for (auto& type : types) duckdb_destroy_logical_type(&type);
  struct ChunkGuard {
    duckdb_data_chunk& chunk;
    ~ChunkGuard() { duckdb_destroy_data_chunk(&chunk); }
  } chunk_guard{chunk};

  const size_t chunk_rows = duckdb_vector_size();
  for (size_t first = 0; first < batch.rows; first += chunk_rows) {
    const size_t count = std::min(chunk_rows, batch.rows - first);
    duckdb_data_chunk_reset(chunk);
    for (size_t c = 0; c < columns.size(); ++c) {
      duckdb_vector vector = duckdb_data_chunk_get_vector(chunk, c);
      if (row_numbers && c + 1 == columns.size()) {
        auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
        for (size_t i = 0; i < count; ++i) out[i] = static_cast<int64_t>(first + i);
      } else if (source[c] < 0) {
        fill_vector_with_nulls(vector, count);
      } else {
        copy_column_to_vector(batch.columns[source[c]], first, count, vector);
      }
    }
    duckdb_data_chunk_set_size(chunk, count);
    SKIPPR_TRY(appender->append(chunk));
  }
  // The appender's rows join the connection's open transaction here (verified by
  // DuckDbSink.RolledBackTransactionLeavesNoRowsAndNoLedgerRow and .CrashBeforeCommitLeavesNothing), so no staging
  // table is needed.
  return appender->close();
}

Status DuckDbSink::merge_rows(const Batch& batch, const BatchId& id, const std::vector<TableColumn>& columns) {
  const auto stage = stage_columns(batch, columns);
  SKIPPR_TRY(conn_->execute(create_stage_sql(stage)));
  SKIPPR_TRY(append_rows(batch, std::string(kDuckDbStageTable), stage, /*row_numbers=*/true));
  for (const auto& sql : merge_statements(batch, id, MergeTarget{table_, merge_key_, columns}, has_deletes(batch))) {
    SKIPPR_TRY(conn_->execute(sql));
  }
  return ok();
}

Result<std::vector<BatchLanded>> DuckDbSink::write_group(std::span<const BatchToLand> group) {
  for (const auto& item : group) {
    SKIPPR_TRY(item.batch.check_shape());
    if (merging()) {
      SKIPPR_TRY(use_table_of(item.batch));
      SKIPPR_TRY(check_merge_rows(item.batch, merge_key_, duckdb_column_rules(), where()));
    }
    if (replacing_partitions() || refreshing()) SKIPPR_TRY(check_sync_field(item.batch, where()));
  }
  SKIPPR_TRY(open());
  auto landed = write_in_transaction(group);
  if (!landed &&
      (landed.error().kind == ErrorKind::kUnavailable || landed.error().kind == ErrorKind::kUnknownOutcome)) {
    // After an I/O error DuckDB may invalidate the whole instance; the retry starts from a fresh open.
    conn_.reset();
    db_.reset();
  }
  if (landed) log_duckdb_memory_if_asked(*conn_);
  return landed;
}

Result<std::vector<BatchLanded>> DuckDbSink::write_in_transaction(std::span<const BatchToLand> group) {
  // A limit raised for a wide table lasts for this transaction only (the guard runs after the transaction's own).
  struct LowerMemory {
    DuckDbSink& sink;
    ~LowerMemory() { sink.memory_.lower(*sink.conn_); }
  } lower_memory{*this};
  auto tx = DuckDbTransaction::begin(*conn_);
  if (!tx) return fail(tx.error().kind, fmt::format("writing to {}: {}", where(), tx.error().message));
  columns_in_transaction_.reset();
  // Everything before COMMIT is definite: the transaction guard rolls it back, so a retry starts clean.
  auto landed = land_new_batches(
      group, [&](const BatchToLand& item) { return ledger_has(item); },
      [&](const BatchToLand& item) { return land_batch(item); });
  if (!landed || all_already_applied(*landed)) return landed;  // tx rolls back
  if (auto committed = tx->commit(); !committed) {
    // DuckDB's commit writes its WAL; a failure there may or may not have made the group durable. Only the same
    // BatchIds may be retried, and the ledger then decides.
    return fail(ErrorKind::kUnknownOutcome,
                fmt::format("committing batch{} {} to {}: {}", group.size() == 1 ? "" : "es", group_ids(group), where(),
                            committed.error().message));
  }
  return landed;  // the engine passes kSinkAfterCommit next, for every sink alike
}

Result<uint64_t> DuckDbSink::land_batch(const BatchToLand& item) {
  SKIPPR_TRY(use_table_of(item.batch));
  const BatchId& id = item.id;
  auto definite = [&](const Error& e) {
    return fail(e.kind, fmt::format("writing batch {} to {}: {}", id.str(), where(), e.message));
  };
  // A replace landing's rows carry their sync; replace_table writes them to the refresh table.
  const bool replacing = replacing_partitions() || refreshing();
  const SyncMark mark = sync_mark_of(item.position_after, id);
  std::optional<Batch> widened;
  if (replacing_partitions()) {
    auto filled = with_partition_fields(
        item.batch, partition_by_, [&] { return describe_table(table_); }, duckdb_column_rules());
    if (!filled) return definite(filled.error());
    widened = std::move(*filled);
  }
  const Batch& read = widened ? *widened : item.batch;
  std::optional<Batch> tagged;
  if (replacing && read.rows > 0) tagged = with_sync_column(read, mark.sync_id);
  const Batch& batch = tagged ? *tagged : read;
  const std::string& into = refreshing() ? refresh_table_ : table_;
  if (refreshing()) {
    if (auto begun = begin_refresh(mark); !begun) return definite(begun.error());
  }
  auto columns = prepare_table(batch, into);
  if (!columns) {
    return columns.error().kind == ErrorKind::kConfig ? std::unexpected(columns.error()) : definite(columns.error());
  }
  // merge_by_key appends to its stage too, replace_partition deletes from the table it appends to.
  const int tables = merging() || replacing_partitions() ? 2 : 1;
  if (auto fits = memory_.fit(*conn_, columns->size(), tables, where()); !fits) {
    return fits.error().kind == ErrorKind::kConfig ? std::unexpected(fits.error()) : definite(fits.error());
  }
  // Values of another type than their column's are converted, or their rows rejected (kept in the rejects table).
  auto conformed = conform_batch(batch, *columns, duckdb_column_rules(), where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : batch;
  if (rows.rows > 0) {
    auto written = merging() ? merge_rows(rows, id, *columns) : append_rows(rows, into, *columns);
    if (!written) return definite(written.error());
    if (replacing_partitions()) {
      auto replaced = conn_->execute(
          replace_partitions_sql(duckdb_replace_dialect(), quote_identifier(table_), partition_by_, mark.sync_id));
      if (!replaced) return definite(replaced.error());
    }
  }
  const size_t rejected = *conformed ? (*conformed)->rejected.size() : 0;
  if (rejected > 0) {
    const std::string rejects = quote_identifier(table_ + std::string(kRejectedSuffix));
    if (auto made = conn_->execute(rejects_create_sql(rejects, "VARCHAR")); !made) return definite(made.error());
    for (const auto& sql : rejects_insert_sql(rejects, id.str(), (*conformed)->rejected, quote_literal)) {
      if (auto inserted = conn_->execute(sql); !inserted) return definite(inserted.error());
    }
  }
  if (refreshing() && mark.ends_sync) {
    if (auto swapped = finish_refresh(); !swapped) return definite(swapped.error());
  }
  failpoint::hit(failpoint::kSinkInTransaction);
  if (auto recorded =
          conn_->execute(ledger_insert_sql(duckdb_ledger(), ledger_target(), id, rows.rows, item.position_after));
      !recorded) {
    return definite(recorded.error());
  }
  return rejected;
}

}  // namespace

Status check_duckdb_landing(const ConnectorContext& ctx) {
  if (ctx.landing == Landing::kMergeByKey && ctx.primary_key.empty() && !ctx.source_keys) {
    return fail(ErrorKind::kConfig,
                fmt::format("sink '{}': merge_by_key needs the pipeline's primary_key; add it", ctx.name));
  }
  return ok();
}

ConnectorSpec duckdb_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "DuckDB";
  spec.is_source = false;
  spec.summary = "an embedded DuckDB database file";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;
  spec.params = {
      {"path", ParamType::kPath, true, nullptr, "the database file; created when absent"},
      {"table", ParamType::kString, false, nullptr,
       "the target table; created from the first batch's schema. With a source of several streams, {stream} in it is "
       "each stream's name: raw_{stream}, or {stream} for the name alone (the default then)"},
      {"max_memory_bytes", ParamType::kInt, false, kDefaultMaxMemoryBytes,
       "the most memory DuckDB may use while landing into a wide table (DuckDB needs ~0.6 MiB a column)"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SKIPPR_TRY(check_duckdb_landing(ctx));
    const auto& path = ctx.params.value("path", std::string());
    if (path.empty()) return fail(ErrorKind::kConfig, fmt::format("sink '{}': DuckDB needs a path", ctx.name));
    auto tables = StreamTables::make(fmt::format("sink '{}'", ctx.name), "table",
                                     StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    const int64_t max_memory = ctx.params.value("max_memory_bytes", static_cast<int64_t>(kDefaultMaxMemoryBytes));
    if (max_memory < static_cast<int64_t>(kAppendingSinkMemoryMiB << 20)) {
      return fail(ErrorKind::kConfig, fmt::format("sink '{}': max_memory_bytes must be at least {} MiB (the memory "
                                                  "DuckDB lands ordinary batches with)",
                                                  ctx.name, kAppendingSinkMemoryMiB));
    }
    return make_duckdb_sink(DuckDbTarget{path, {}, {}, true, static_cast<uint64_t>(max_memory)}, std::move(*tables),
                            ctx);
  };
  return spec;
}

std::unique_ptr<Sink> make_duckdb_sink(DuckDbTarget target, StreamTables tables, const ConnectorContext& ctx) {
  return std::make_unique<DuckDbSink>(std::move(target), std::move(tables), ctx);
}

}  // namespace skippr
