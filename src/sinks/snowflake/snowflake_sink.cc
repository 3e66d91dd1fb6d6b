#include "sinks/snowflake/snowflake_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <thread>

#include "clients/aws/aws_params.h"
#include "clients/aws/s3_client.h"
#include "clients/snowflake/snowflake_client.h"
#include "core/change_fields.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "sinks/kit/batch_ledger.h"
#include "sinks/kit/conform_batch.h"
#include "sinks/kit/destination_fence.h"
#include "sinks/kit/merge_sql.h"
#include "sinks/kit/object_sink.h"
#include "sinks/kit/per_batch_sink.h"
#include "sinks/kit/schema_evolution.h"
#include "sinks/kit/stream_tables.h"
#include "sinks/snowflake/sf_types.h"

namespace skippr {
namespace {

// Snowflake's limit on one statement's text is 1 MB; rows are cut into INSERTs below it.
constexpr size_t kStatementBytes = 900 * 1024;
// A coalesced transaction carries batches up to this much SQL.
constexpr size_t kGroupBytes = 16 << 20;
// merge_by_key stages each batch in a temporary table of the request's session (DDL: before the transaction).
constexpr std::string_view kStageTable = "_skippr_stage";
constexpr std::string_view kTokenType = "NUMBER(38,0)";

// An external stage on S3 the user made (CREATE STAGE ... URL = 's3://bucket/prefix/'): batches from
// `threshold_bytes` up, and any batch with a row too large for a statement, are uploaded there and loaded by COPY INTO.
struct SnowflakeStage {
  std::string name;            // as written in `stage`, after the @
  std::string bucket, prefix;  // where its URL points ("" or ending in '/')
  std::unique_ptr<S3Client> s3;
  size_t threshold_bytes = 0;
};

// A row whose literals come near Snowflake's statement limit cannot travel in a VALUES list.
bool has_oversized_row(const Batch& batch) {
  for (size_t r = 0; r < batch.rows; ++r) {
    size_t bytes = 0;
    for (const auto& column : batch.columns) {
      bytes += is_variable_length(column.type) && column.is_valid(r) ? column.string_at(r).size() * 2 + 8 : 24;
    }
    if (bytes > kStatementBytes) return true;
  }
  return false;
}

ColumnRules sf_column_rules() {
  return {[](std::string_view a, std::string_view b) { return a == b; }, sf_column_accepts, sf_quote_identifier};
}

class SnowflakeSink final : public PerBatchSink {
 public:
  // `tables` says where each stream lands (one table, or a {stream} pattern: sinks/kit/stream_tables.h); `merge`
  // lands by key, on `pipeline_key` or each batch's own (merge_key_of).
  SnowflakeSink(SnowflakeClient client, std::string database, std::string schema, StreamTables tables,
                std::string pipeline, bool merge, std::vector<std::string> pipeline_key,
                std::optional<SnowflakeStage> stage)
      : client_(std::move(client)),
        database_(std::move(database)),
        schema_(std::move(schema)),
        tables_(std::move(tables)),
        table_(tables_.pattern()),  // one table, or (several streams) the pattern until the first batch
        pipeline_(std::move(pipeline)),
        merge_(merge),
        pipeline_key_(std::move(pipeline_key)),
        merge_key_(merge ? pipeline_key_ : std::vector<std::string>()),
        stage_(std::move(stage)),
        // One fence for the pipeline: beside its table, or (several streams) named after its table pattern.
        fence_(
            FenceSql{ledger(), prefix() + sf_quote_identifier(table_ + std::string(kFenceSuffix)), target(), pipeline_,
                     tables_.per_stream() ? tables_.target_like([this](std::string_view t) { return target_of(t); })
                                          : std::string()},
            {fence_reader([this](const std::string& sql) { return client_.query(sql); }),
             [this](const std::string& sql) -> Status {
               SKIPPR_TRY(client_.query(sql));
               return ok();
             }},
            where()) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  // Appends coalesce: several batches in one multi-statement transaction (merge_by_key's staging table is DDL,
  // which would commit a transaction midway, so those land one batch at a time: all of a batch's streams in one).
  bool lands_groups() const override { return !merging(); }
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  Status take_over(std::string_view lineage) override;

 private:
  std::string prefix() const { return sf_quote_identifier(database_) + "." + sf_quote_identifier(schema_) + "."; }
  std::string target_of(std::string_view table) const { return prefix() + sf_quote_identifier(table); }
  std::string target() const { return target_of(table_); }
  std::string rejects() const { return prefix() + sf_quote_identifier(table_ + std::string(kRejectedSuffix)); }
  std::string tombstones() const { return prefix() + sf_quote_identifier(table_ + std::string(kTombstoneSuffix)); }
  bool merging() const { return merge_; }
  std::string where() const { return fmt::format("{}: table {}.{}.{}", client_.where(), database_, schema_, table_); }
  LedgerDialect ledger() const { return {prefix(), "", sf_quote_literal, "VARCHAR", "NUMBER(20,0)"}; }
  const FenceSql& fence() const { return fence_.sql(); }
  std::string not_landed(const BatchId& id) const { return fence_.unlanded(id, target()); }

  Status describe();
  // Points table_ (and what is known of it) at the table `batch`'s stream lands in, and merge_key_ at its key.
  Status use_table_of(const Batch& batch);
  Status prepare_table(const Batch& batch);
  Result<bool> ledger_has(const BatchId& id);
  // One batch's statements: `before` the transaction (DDL and the merge staging table), `inside` it (rows, rejects,
  // the ledger row), `after` it.
  struct Prepared {
    const BatchToLand* item = nullptr;
    std::string target;  // the table it lands in, as the ledger names it
    std::vector<std::string> before, inside, after;
    bool staged = false;
    std::string stage_key;  // of its staged file, when staged
    uint64_t rejected = 0;
    size_t bytes = 0;  // of the statements inside
  };
  // nullopt when the ledger holds the batch already. `part` (the item's place in its group) keeps the staging tables
  // of one request apart, and names them the same when the group is sent again.
  Result<std::optional<Prepared>> prepare(const BatchToLand& item, size_t part = 0);
  // One request: every batch's `before`, then one transaction of their `inside`, then their `after`.
  Status send_transaction(std::span<const Prepared> batches);
  Result<WriteOutcome> land(const BatchToLand& item) override;
  // The INSERT ... SELECT ... FROM VALUES statements of `rows` into `into`, whose columns are `columns` (each value
  // converted to its column's type), each below kStatementBytes and ending in `condition` (may be empty). With
  // `row_numbers`, each row's index in the batch goes into the last column of `columns`.
  std::vector<std::string> insert_statements(const Batch& rows, const std::string& into,
                                             const std::vector<TableColumn>& columns, const std::string& condition,
                                             bool row_numbers) const;
  // A staging table's columns: the batch's fields in the target's types (merge_by_key's change fields as text), then
  // the row numbers when asked.
  std::vector<TableColumn> stage_columns(const Batch& rows, bool row_numbers) const {
    std::vector<TableColumn> stage;
    for (const Field& field : rows.schema.fields) {
      const TableColumn* column = merging() && is_change_field(field.name)
                                      ? nullptr
                                      : find_column(known_.columns, field.name, sf_column_rules());
      stage.push_back({field.name, column ? column->type : "VARCHAR"});
    }
    if (row_numbers) stage.push_back({std::string(kRowNumberColumn), std::string(kTokenType)});
    return stage;
  }
  // A temporary table of the request's session (DDL: it goes before the transaction).
  static std::string temporary_table_sql(const std::string& name, const std::vector<TableColumn>& columns) {
    std::vector<std::string> definitions;
    for (const auto& c : columns) definitions.push_back(fmt::format("{} {}", sf_quote_identifier(c.name), c.type));
    return fmt::format("CREATE OR REPLACE TEMPORARY TABLE {} ({})", name, fmt::join(definitions, ", "));
  }
  // The statements that land a merge_by_key batch: staging (before the transaction) and the MERGE (inside it).
  void merge_statements(const Batch& rows, const BatchId& id, const std::string& stage_table,
                        std::vector<std::string>& before, std::vector<std::string>& inside) const;
  // Uploads the batch's rows to the stage as `<table>/<lineage>-<epoch>-<seq>.json` (once: an object there already
  // is the same batch's) and returns the COPY INTO that loads that file into `into` (columns `columns`, each value
  // converted to its column's type; with `row_numbers`, the last column gets each row's index).
  Result<std::string> stage_batch(const Batch& rows, const BatchId& id, const std::string& into,
                                  const std::vector<TableColumn>& columns, bool row_numbers);
  std::string stage_key(const BatchId& id) const {
    return fmt::format("{}{}/{}-{}-{}.json", stage_->prefix, table_, id.lineage.empty() ? "none" : id.lineage, id.epoch,
                       id.seq);
  }

  SnowflakeClient client_;
  std::string database_, schema_;
  StreamTables tables_;
  std::string table_;  // the table being landed in (use_table_of)
  std::string pipeline_;
  bool merge_ = false;                     // landing: merge_by_key
  std::vector<std::string> pipeline_key_;  // the pipeline's primary_key (empty: each batch carries its own)
  std::vector<std::string> merge_key_;     // the key of the batch being landed
  bool opened_ = false;
  // What is known of table_: its columns as last described (empty: not there yet), whether its rejects table is made.
  struct TableState {
    std::vector<TableColumn> columns;
    bool rejects_ready = false;
  };
  TableState known_;
  KnownPerTable<TableState> other_tables_;  // the same of the stream tables other than table_
  std::optional<SnowflakeStage> stage_;
  bool staged_ = false;  // this batch travels through the stage
  DestinationFence fence_;
};

Status SnowflakeSink::open() {
  if (opened_) return ok();
  // The first request proves the login, the warehouse and the database; the ledger is made once.
  SKIPPR_TRY(client_.query(fmt::format(
      "CREATE TABLE IF NOT EXISTS {}\"{}\" (target_table VARCHAR NOT NULL, batch_id VARCHAR NOT NULL, pipeline "
      "VARCHAR, lineage VARCHAR, epoch NUMBER(20,0), seq NUMBER(20,0), \"rows\" NUMBER(20,0), position_after VARCHAR, "
      "landed_at TIMESTAMP_LTZ DEFAULT CURRENT_TIMESTAMP(), PRIMARY KEY (target_table, batch_id))",
      prefix(), kLedgerTable)));
  SKIPPR_TRY(client_.query(fence().create()));
  if (!tables_.per_stream()) SKIPPR_TRY(describe());
  opened_ = true;
  return ok();
}

Status SnowflakeSink::describe() {
  auto rows = client_.query(
      fmt::format("SELECT column_name, data_type FROM {}.information_schema.columns WHERE table_schema = {} AND "
                  "table_name = {} ORDER BY ordinal_position",
                  sf_quote_identifier(database_), sf_quote_literal(schema_), sf_quote_literal(table_)));
  if (!rows) return std::unexpected(rows.error());
  known_.columns.clear();
  for (const auto& row : rows->rows) known_.columns.push_back({row.at(0).value_or(""), row.at(1).value_or("")});
  return ok();
}

Status SnowflakeSink::use_table_of(const Batch& batch) {
  if (merging()) {
    merge_key_ = merge_key_of(batch, pipeline_key_);
    if (merge_key_.empty()) return no_merge_key(batch, where());
  }
  // Quoted identifiers keep their case in Snowflake: only the same spelling is the same table.
  auto known = other_tables_.enter(tables_, batch.stream, tables_.table_for(batch.stream), same_name, table_, known_);
  if (!known) return std::unexpected(known.error());
  return *known ? ok() : describe();
}

Result<std::optional<LedgerTip>> SnowflakeSink::ledger_tip() {
  SKIPPR_TRY(open());
  auto rows = client_.query(tables_.per_stream() ? ledger_tip_any_table_sql(ledger(), fence().target_like, pipeline_)
                                                 : ledger_tip_sql(ledger(), target(), pipeline_));
  if (!rows) return fail(rows.error().kind, fmt::format("reading the ledger of {}: {}", where(), rows.error().message));
  return ledger_tip_of(rows->rows);
}

Status SnowflakeSink::take_over(std::string_view lineage) {
  SKIPPR_TRY(open());
  // The UPDATE queues behind every landing transaction still holding the fence table's lock (one of a killed process
  // included); one that starts later finds the row no longer its lineage's and writes nothing.
  return fence_.take(lineage);
}

Result<bool> SnowflakeSink::ledger_has(const BatchId& id) {
  auto rows = client_.query(ledger_has_sql(ledger(), target(), id));
  if (!rows) return std::unexpected(rows.error());
  return !rows->rows.empty();
}

Status SnowflakeSink::prepare_table(const Batch& batch) {
  if (known_.columns.empty()) {
    const auto definitions =
        new_table_definitions(batch.schema, sf_column_rules(), sf_new_column_type, merging() ? kTokenType : "");
    SKIPPR_TRY(
        client_.query(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", target(), fmt::join(definitions, ", "))));
    SKIPPR_TRY(describe());
  }
  SKIPPR_TRY(check_key_columns(known_.columns, merge_key_, sf_column_rules(), where()));
  auto missing = fields_to_add(known_.columns, batch.schema, sf_column_rules(), where(), merging());
  if (!missing) return std::unexpected(missing.error());
  if (missing->empty()) return ok();
  // DDL commits on its own in Snowflake, so it runs before the batch's transaction (IF NOT EXISTS: a retry is fine).
  for (const auto& field : *missing) {
    SKIPPR_TRY(client_.query(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}", target(),
                                         sf_quote_identifier(field.name), sf_new_column_type(field.type))));
  }
  return describe();
}

std::vector<std::string> SnowflakeSink::insert_statements(const Batch& rows, const std::string& into,
                                                          const std::vector<TableColumn>& columns,
                                                          const std::string& condition, bool row_numbers) const {
  std::string names, converted, aliases;
  const size_t fields = rows.schema.fields.size() + (row_numbers ? 1 : 0);
  for (size_t f = 0; f < fields; ++f) {
    const std::string name = f < rows.schema.fields.size() ? rows.schema.fields[f].name : std::string(kRowNumberColumn);
    const TableColumn* column = find_column(columns, name, sf_column_rules());
    const std::string alias = fmt::format("c{}", f);
    names += (f ? ", " : "") + sf_quote_identifier(name);
    converted += (f ? ", " : "") + sf_convert("v." + alias, column ? column->type : "VARCHAR");
    aliases += (f ? ", " : "") + alias;
  }
  const std::string head = fmt::format("INSERT INTO {} ({}) SELECT {} FROM (VALUES ", into, names, converted);
  const std::string tail = fmt::format(") AS v({}){}", aliases, condition.empty() ? "" : " WHERE " + condition);
  std::vector<std::string> statements;
  std::string sql;
  for (size_t r = 0; r < rows.rows; ++r) {
    if (sql.empty()) sql = head;
    sql += sql.size() == head.size() ? "(" : ", (";
    for (size_t f = 0; f < rows.columns.size(); ++f) {
      if (f) sql += ", ";
      sf_append_literal(rows.columns[f], r, sql);
    }
    if (row_numbers) sql += fmt::format(", '{}'", r);
    sql += ')';
    if (sql.size() > kStatementBytes) statements.push_back(std::move(sql += tail)), sql.clear();
  }
  if (!sql.empty()) statements.push_back(sql + tail);
  return statements;
}

void SnowflakeSink::merge_statements(const Batch& rows, const BatchId& id, const std::string& stage_table,
                                     std::vector<std::string>& before, std::vector<std::string>& inside) const {
  const std::vector<TableColumn> stage = stage_columns(rows, /*row_numbers=*/true);
  const MergeSql m{target(),          tombstones(),           stage_table, merge_key_, known_.columns,
                   sf_column_rules(), std::string(kTokenType)};
  before.push_back(temporary_table_sql(m.stage, stage));
  before.push_back(tombstones_create_sql(m));
  if (!staged_) {
    for (auto& sql : insert_statements(rows, m.stage, stage, "", /*row_numbers=*/true))
      before.push_back(std::move(sql));
  }
  // Replaying the MERGE changes nothing (every write is conditional on the order token), so it needs no ledger guard.
  for (auto& sql : merge_apply_sql(rows, id, m, has_deletes(rows))) inside.push_back(std::move(sql));
}

Result<std::optional<SnowflakeSink::Prepared>> SnowflakeSink::prepare(const BatchToLand& item, size_t part) {
  SKIPPR_TRY(use_table_of(item.batch));
  // Only a batch an earlier attempt may have landed can be in the ledger; asking costs a round trip, so only then.
  if (item.maybe_landed) {
    auto held = ledger_has(item.id);
    if (!held) return std::unexpected(held.error());
    if (*held) return std::optional<Prepared>();
  }
  if (merging()) SKIPPR_TRY(check_merge_rows(item.batch, merge_key_, sf_column_rules(), where()));
  SKIPPR_TRY(prepare_table(item.batch));
  auto conformed = conform_batch(item.batch, known_.columns, sf_column_rules(), where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : item.batch;
  const std::vector<RejectedRow> rejected = *conformed ? (*conformed)->rejected : std::vector<RejectedRow>();
  if (!rejected.empty() && !known_.rejects_ready) {
    SKIPPR_TRY(client_.query(fmt::format(
        "CREATE TABLE IF NOT EXISTS {} (batch_id VARCHAR NOT NULL, \"row\" NUMBER(38,0) NOT NULL, reason VARCHAR, "
        "record VARCHAR, rejected_at TIMESTAMP_LTZ DEFAULT CURRENT_TIMESTAMP())",
        rejects())));
    known_.rejects_ready = true;
  }

  Prepared p;
  p.item = &item;
  p.target = target();
  p.rejected = rejected.size();
  staged_ = rows.rows > 0 && stage_ && (rows.byte_size() >= stage_->threshold_bytes || has_oversized_row(rows));
  p.staged = staged_;
  if (!staged_ && rows.rows > 0 && has_oversized_row(rows)) {
    return fail(ErrorKind::kConfig, fmt::format("{}: a row of batch {} is too large for a statement (Snowflake takes "
                                                "1 MB of SQL text); set `stage` and `stage_url` (an external stage "
                                                "on S3) so large batches travel as files",
                                                where(), item.id.str()));
  }
  if (staged_) p.stage_key = stage_key(item.id);
  if (rows.rows > 0 && merging()) {
    // A staging table per batch of the request (the streams of one batch land in one request).
    const std::string stage_table =
        sf_quote_identifier(part == 0 ? std::string(kStageTable) : fmt::format("{}_{}", kStageTable, part));
    merge_statements(rows, item.id, stage_table, p.before, p.inside);
    if (staged_) {
      // Into the session's new temporary table: FORCE, as its load history means nothing.
      auto copy = stage_batch(rows, item.id, stage_table, stage_columns(rows, true), true);
      if (!copy) return std::unexpected(copy.error());
      p.before.push_back(*copy + " FORCE = TRUE");
    }
    p.after.push_back(fmt::format("DROP TABLE IF EXISTS {}", stage_table));
  } else if (staged_) {
    // Loaded into a temporary table before the transaction (COPY INTO takes no condition), then inserted on the
    // ledger's and the fence's condition like a VALUES list: an execution of a run that lost the fence adds nothing.
    const std::string stage = sf_quote_identifier(fmt::format("{}_{}_{}", kStageTable, item.id.seq, part));
    const std::vector<TableColumn> columns = stage_columns(rows, /*row_numbers=*/false);
    auto copy = stage_batch(rows, item.id, stage, columns, false);
    if (!copy) return std::unexpected(copy.error());
    p.before.push_back(temporary_table_sql(stage, columns));
    p.before.push_back(*copy + " FORCE = TRUE");
    std::string names;
    for (const Field& field : rows.schema.fields)
      names += (names.empty() ? "" : ", ") + sf_quote_identifier(field.name);
    p.inside.push_back(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} WHERE {}", target(), names, names, stage,
                                   not_landed(item.id)));
    p.after.push_back(fmt::format("DROP TABLE IF EXISTS {}", stage));
  } else if (rows.rows > 0) {
    p.inside = insert_statements(rows, target(), known_.columns, not_landed(item.id), /*row_numbers=*/false);
  }
  for (auto& sql :
       rejects_insert_sql(rejects(), item.id.str(), rejected, sf_quote_literal, nullptr, not_landed(item.id))) {
    p.inside.push_back(std::move(sql));
  }
  // The ledger row last, on the same condition: a second execution of this batch adds nothing, whether it runs after
  // the first committed or beside it (the fence's UPDATE, first in the transaction, makes it wait for the first, and
  // each statement then sees what the first committed: READ COMMITTED).
  p.inside.push_back(ledger_insert_unless_landed_sql(ledger(), p.target, item.id, item.batch.rows, item.position_after,
                                                     item.id.lineage.empty() ? "" : fence().held(item.id.lineage)));
  for (const auto& sql : p.inside) p.bytes += sql.size();
  return std::optional(std::move(p));
}

Status SnowflakeSink::send_transaction(std::span<const Prepared> batches) {
  for (const auto& b : batches) SKIPPR_TRY(fence_.hold(b.item->id));
  std::vector<std::string> statements;
  for (const auto& b : batches) statements.insert(statements.end(), b.before.begin(), b.before.end());
  statements.push_back("BEGIN TRANSACTION");
  // First in the transaction: the fence's row, locked to the end of it (an UPDATE waits for every other transaction
  // that updated the table, a successor's takeover included).
  statements.push_back(fence().hold());
  for (const auto& b : batches) statements.insert(statements.end(), b.inside.begin(), b.inside.end());
  statements.push_back("COMMIT");
  for (const auto& b : batches) statements.insert(statements.end(), b.after.begin(), b.after.end());
  std::string request;
  for (const auto& sql : statements) request += sql + ";\n";
  const BatchId& first = batches.front().item->id;
  const BatchId& last = batches.back().item->id;
  // One batch: the id its every attempt has had. A group: its first and last batch name it, so the same group resent
  // carries the same id (a regrouped replay is another request; each batch's ledger condition still holds).
  const std::string& into = batches.front().target;
  const std::string request_id = snowflake_request_id(
      batches.size() == 1 ? into + "|" + first.str() : into + "|" + first.str() + ".." + last.str());
  bool retry = std::ranges::any_of(batches, [](const Prepared& b) { return b.item->maybe_landed; });
  // The request is the transaction: a stop here has sent nothing of it.
  if (batches.size() > 1) failpoint::hit(failpoint::kSinkInGroup);
  failpoint::hit(failpoint::kSinkInTransaction);
  for (int attempt = 0;; ++attempt) {
    auto done = client_.execute(request, static_cast<int>(statements.size()), request_id, retry);
    if (done) break;
    // A group whose answer was lost is asked for again under its requestId here: the engine would land its batches
    // one by one, under other ids, which Snowflake could run beside this one still in flight.
    if (done.error().kind != ErrorKind::kUnknownOutcome || batches.size() == 1 || attempt == 3) {
      return std::unexpected(done.error());
    }
    retry = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500 << attempt));
  }
  failpoint::hit(failpoint::kSinkAfterCommit);
  // A request that committed without the last batch's ledger row wrote nothing: its lineage had lost the fence (a
  // group holds one lineage: see write_group).
  if (!last.lineage.empty()) SKIPPR_TRY(fence_.confirm_landed(last, batches.back().target));
  for (const auto& b : batches) {
    if (!b.staged) continue;
    // Loaded and recorded: a retry finds the ledger row and never loads it again. A file that stays (this delete
    // failed, or a lost DATA_DIR re-read its batch under a new name) is never loaded: a lifecycle rule may expire it.
    auto removed = stage_->s3->delete_object(stage_->bucket, b.stage_key);
    if (!removed) spdlog::debug("{}: a staged file stays: {}", where(), removed.error().message);
  }
  return ok();
}

Result<WriteOutcome> SnowflakeSink::land(const BatchToLand& item) {
  SKIPPR_TRY(open());
  last_rejected_ = 0;
  auto prepared = prepare(item);
  if (!prepared) return std::unexpected(prepared.error());
  if (!*prepared) return WriteOutcome::kAlreadyApplied;
  SKIPPR_TRY(send_transaction(std::span(&**prepared, 1)));
  last_rejected_ = (*prepared)->rejected;
  return WriteOutcome::kApplied;
}

Result<std::vector<BatchLanded>> SnowflakeSink::write_group(std::span<const BatchToLand> group) {
  if (group.size() == 1 || (merging() && !tables_.per_stream())) return PerBatchSink::write_group(group);
  SKIPPR_TRY(open());
  std::vector<BatchLanded> landed(group.size(), {WriteOutcome::kAlreadyApplied, 0});
  std::vector<Prepared> pending;
  std::vector<size_t> positions;  // of pending's batches in the group
  size_t bytes = 0;
  auto flush = [&]() -> Status {
    if (pending.empty()) return ok();
    SKIPPR_TRY(send_transaction(pending));
    for (size_t i = 0; i < pending.size(); ++i) landed[positions[i]] = {WriteOutcome::kApplied, pending[i].rejected};
    pending.clear();
    positions.clear();
    bytes = 0;
    return ok();
  };
  for (size_t i = 0; i < group.size(); ++i) {
    auto prepared = prepare(group[i], i);
    if (!prepared) return std::unexpected(prepared.error());
    if (!*prepared) continue;
    // Batches one transaction carries, up to kGroupBytes of SQL (a larger group is several transactions, in order),
    // all of one lineage (the fence is held by one: the check after the commit speaks for the whole transaction).
    // The streams of one batch are never split: a reader sees all of a batch's tables or none.
    const bool other_lineage = !pending.empty() && pending.back().item->id.lineage != group[i].id.lineage;
    const bool other_batch = !pending.empty() && pending.back().item->id.str() != group[i].id.str();
    if (other_batch && (bytes + (*prepared)->bytes > kGroupBytes || other_lineage)) SKIPPR_TRY(flush());
    bytes += (*prepared)->bytes;
    pending.push_back(std::move(**prepared));
    positions.push_back(i);
  }
  SKIPPR_TRY(flush());
  return landed;
}

Result<std::string> SnowflakeSink::stage_batch(const Batch& rows, const BatchId& id, const std::string& into,
                                               const std::vector<TableColumn>& columns, bool row_numbers) {
  const std::string body = text_valued_json_lines(rows, row_numbers ? kRowNumberColumn : std::string_view());
  const std::string key = stage_key(id);
  auto put = stage_->s3->put_object_if_absent(stage_->bucket, key, body, "application/x-ndjson");
  if (!put)
    return fail(put.error().kind, fmt::format("{}: staging batch {}: {}", where(), id.str(), put.error().message));
  std::string names, converted;
  const size_t fields = rows.schema.fields.size() + (row_numbers ? 1 : 0);
  for (size_t f = 0; f < fields; ++f) {
    const std::string name = f < rows.schema.fields.size() ? rows.schema.fields[f].name : std::string(kRowNumberColumn);
    const TableColumn* column = find_column(columns, name, sf_column_rules());
    names += (f ? ", " : "") + sf_quote_identifier(name);
    // Every value is a JSON string in the file (or null): read as text, converted as a VALUES literal would be.
    converted += (f ? ", " : "") + sf_convert(fmt::format("$1:{}::VARCHAR", sf_quote_identifier(name)),
                                              column ? column->type : "VARCHAR", "BASE64");
  }
  const std::string file = key.substr(key.rfind('/') + 1);
  return fmt::format("COPY INTO {} ({}) FROM (SELECT {} FROM @{}/{}/) FILES = ({}) FILE_FORMAT = (TYPE = JSON)", into,
                     names, converted, stage_->name, table_, sf_quote_literal(file));
}

Result<std::string> read_key_file(const std::string& path, std::string_view where) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: cannot read private_key_file {}", where, path));
  }
  return text.str();
}

// The stage parameters: none, or a stage name with the s3:// URL it points at (and how to reach that bucket).
Result<std::optional<SnowflakeStage>> read_stage(const nlohmann::json& p, const std::string& where) {
  std::string name = p.value("stage", std::string());
  const std::string url = p.value("stage_url", std::string());
  if (name.empty() && url.empty()) return std::optional<SnowflakeStage>();
  if (name.empty() || !url.starts_with("s3://") || url.size() <= 5) {
    return fail(ErrorKind::kConfig, fmt::format("{}: `stage` and `stage_url` (s3://bucket/prefix, where the stage's "
                                                "URL points) go together",
                                                where));
  }
  if (name.starts_with("@")) name.erase(0, 1);
  SnowflakeStage stage;
  stage.name = name;
  const std::string path = url.substr(5);
  stage.bucket = path.substr(0, path.find('/'));
  stage.prefix = path.find('/') == std::string::npos ? "" : path.substr(path.find('/') + 1);
  if (!stage.prefix.empty() && !stage.prefix.ends_with('/')) stage.prefix += '/';
  SKIPPR_TRY(check_bucket_name(where, stage.bucket));
  const int64_t threshold = p.value("stage_threshold_bytes", int64_t{1} << 20);
  if (threshold < 0) return fail(ErrorKind::kConfig, fmt::format("{}: stage_threshold_bytes must be 0 or more", where));
  stage.threshold_bytes = static_cast<size_t>(threshold);
  nlohmann::json aws = nlohmann::json::object();
  for (const char* key : {"region", "endpoint", "access_key_id", "secret_access_key"}) {
    const std::string value = p.value(std::string("stage_") + key, std::string());
    if (!value.empty()) aws[key] = value;
  }
  auto options = read_aws_options(aws, where);
  if (!options) return std::unexpected(options.error());
  auto service = resolve_aws_service(*options, "s3", where);
  if (!service) return std::unexpected(service.error());
  stage.s3 = std::make_unique<S3Client>(std::move(*service));
  return std::optional(std::move(stage));
}

}  // namespace

ConnectorSpec snowflake_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Snowflake";
  spec.is_source = false;
  spec.summary = "a Snowflake table through the SQL API v2 (key-pair JWT; rows and ledger in one transaction)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;        // all of a batch's tables in one transaction
  spec.max_identifier_bytes = 255;  // Snowflake identifiers hold 255 characters; counted in bytes to be safe
  spec.params = {
      {"account", ParamType::kString, true, nullptr, "the account identifier (orgname-accountname, or a locator)"},
      {"user", ParamType::kString, true, nullptr, "the user whose RSA_PUBLIC_KEY matches private_key_file"},
      {"private_key_file", ParamType::kPath, true, nullptr, "the user's unencrypted PEM RSA private key (a secret)"},
      {"role", ParamType::kString, false, "", "the role; empty: the user's default"},
      {"warehouse", ParamType::kString, false, "", "the warehouse; empty: the user's default"},
      {"database", ParamType::kString, true, nullptr, "the database, as Snowflake stores its name (case-sensitive)"},
      {"schema", ParamType::kString, false, "PUBLIC", "the schema, as stored (case-sensitive)"},
      {"table", ParamType::kString, false, nullptr,
       "the target table, created from the first batch, name kept as written; may hold {stream} (default for a "
       "source of several streams: {stream}, each stream in a table of its own)"},
      {"endpoint", ParamType::kString, false, "", "the API's origin; empty: https://<account>.snowflakecomputing.com"},
      {"timeout_seconds", ParamType::kDouble, false, 60.0, "how long one HTTP request may take"},
      {"stage", ParamType::kString, false, "",
       "an external stage on S3 (its name as Snowflake knows it, e.g. ANALYTICS.PUBLIC.SKIPPR_STAGE): large batches "
       "are uploaded there and loaded by COPY INTO"},
      {"stage_url", ParamType::kString, false, "", "the s3://bucket/prefix the stage's URL points at"},
      {"stage_threshold_bytes", ParamType::kInt, false, int64_t{1} << 20,
       "batches from this size up travel through the stage (so does any batch with a row above ~900 KB)"},
      {"stage_region", ParamType::kString, false, "", "the bucket's region; default: AWS_REGION, then us-east-1"},
      {"stage_endpoint", ParamType::kString, false, "", "an S3-compatible endpoint for the uploads"},
      {"stage_access_key_id", ParamType::kString, false, "", "default: the AWS credential chain; use ${VAR}"},
      {"stage_secret_access_key", ParamType::kString, false, "", "use ${VAR} to keep it out of the file"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string where = fmt::format("sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend && ctx.landing != Landing::kMergeByKey) {
      return fail(ErrorKind::kConfig, fmt::format("{}: landing {} is not built for Snowflake yet; use append or "
                                                  "merge_by_key",
                                                  where, to_string(ctx.landing)));
    }
    SnowflakeConfig config;
    config.account = ctx.params.value("account", std::string());
    config.user = ctx.params.value("user", std::string());
    const std::string key_file = ctx.params.value("private_key_file", std::string());
    auto key = read_key_file(key_file, where);
    if (!key) return std::unexpected(key.error());
    config.private_key_pem = std::move(*key);
    config.key_source = "private_key_file " + key_file;
    config.role = ctx.params.value("role", std::string());
    config.warehouse = ctx.params.value("warehouse", std::string());
    config.database = ctx.params.value("database", std::string());
    config.schema = ctx.params.value("schema", std::string("PUBLIC"));
    config.endpoint = ctx.params.value("endpoint", std::string());
    config.request_timeout_seconds = ctx.params.value("timeout_seconds", 60.0);
    config.where = where;
    if (!config.endpoint.empty() && !config.endpoint.starts_with("http://") &&
        !config.endpoint.starts_with("https://")) {
      return fail(ErrorKind::kConfig, fmt::format("{}: endpoint must start with https:// (or http://)", where));
    }
    auto stage = read_stage(ctx.params, where);
    if (!stage) return std::unexpected(stage.error());
    auto client = SnowflakeClient::make(std::move(config));
    if (!client) return fail(ErrorKind::kConfig, fmt::format("{}: {}", where, client.error().message));
    auto tables = StreamTables::make(where, "table", StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    return std::make_unique<SnowflakeSink>(std::move(*client), ctx.params.value("database", std::string()),
                                           ctx.params.value("schema", std::string("PUBLIC")), std::move(*tables),
                                           ctx.pipeline, ctx.landing == Landing::kMergeByKey, ctx.primary_key,
                                           std::move(*stage));
  };
  return spec;
}

}  // namespace skippr
