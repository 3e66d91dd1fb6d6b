#include "sinks/bigquery/bigquery_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <map>
#include <thread>

#include "clients/bigquery/bigquery_client.h"
#include "core/change_fields.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "sinks/kit/batch_ledger.h"
#include "sinks/kit/conform_batch.h"
#include "sinks/kit/destination_fence.h"
#include "sinks/kit/merge_sql.h"
#include "sinks/kit/per_batch_sink.h"
#include "sinks/kit/schema_evolution.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

// A job that ended in an error is known not to have applied, so the next attempt takes the next id: a run tries
// this many in a row, then the batch waits (exit 75) or, for an error that no retry mends, stops (exit 2). A later
// run reads the spent ids back (409, jobs.get) and goes on after them, up to kJobIds in all.
constexpr int kJobAttempts = 4;
constexpr int kJobIds = 256;

// BigQuery cancels a transaction that mutates a table another transaction mutates ("Transaction is aborted due to
// concurrent update against table ..."), and once refused conflicting DML outside one ("Could not serialize access
// to table ... due to concurrent update"), both as invalidQuery: the statement was right, a later attempt runs.
bool concurrent_update(std::string_view message) { return message.find("concurrent update") != std::string::npos; }

// errorResult reasons that a later attempt may not meet (BigQuery's own troubles, a concurrent transaction).
bool transient_job_error(const std::string& error) {
  // `error` is "<reason>: <message>" (job_error).
  return bigquery_transient_reason(std::string_view(error).substr(0, error.find(':'))) || concurrent_update(error);
}

// How often a statement on the fence is sent again after a concurrent-update answer before the run waits (exit 75).
constexpr int kFenceAttempts = 8;
constexpr std::string_view kTokenType = "BIGNUMERIC";

std::string bq_new_column_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "BOOL";
    case Type::kInt64:
      return "INT64";
    case Type::kDouble:
      return "FLOAT64";
    case Type::kString:
      return "STRING";
    case Type::kBinary:
      return "BYTES";
    case Type::kTimestamp:
      return "TIMESTAMP";
    case Type::kDate:
      return "DATE";
    case Type::kJson:
      return "JSON";
  }
  return "STRING";
}

// tables.get spells types the legacy way (INTEGER, FLOAT, BOOLEAN); DDL the GoogleSQL way (INT64, FLOAT64, BOOL).
bool bq_column_accepts(std::string_view column_type, Type type) {
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names) {
      if (column_type == n) return true;
    }
    return false;
  };
  switch (type) {
    case Type::kBool:
      return is({"BOOLEAN", "BOOL"});
    case Type::kInt64:
      return is({"INTEGER", "INT64", "NUMERIC", "BIGNUMERIC"});
    case Type::kDouble:
      return is({"FLOAT", "FLOAT64"});
    case Type::kString:
      return is({"STRING"});
    case Type::kBinary:
      return is({"BYTES"});
    case Type::kTimestamp:
      return is({"TIMESTAMP"});
    case Type::kDate:
      return is({"DATE"});
    case Type::kJson:
      return is({"JSON"});
  }
  return false;
}

ColumnRules bq_column_rules() {
  return {[](std::string_view a, std::string_view b) { return a == b; }, bq_column_accepts, bq_quote_identifier};
}

class BigQuerySink final : public PerBatchSink {
 public:
  // `tables` says where each stream lands (one table, or a {stream} pattern: sinks/kit/stream_tables.h); `merge`
  // lands by key, on `pipeline_key` or each batch's own (merge_key_of).
  BigQuerySink(BigQueryClient client, std::string project, std::string dataset, StreamTables tables,
               std::string pipeline, bool merge, std::vector<std::string> pipeline_key)
      : client_(std::move(client)),
        project_(std::move(project)),
        dataset_(std::move(dataset)),
        tables_(std::move(tables)),
        table_(tables_.pattern()),  // one table, or (several streams) the pattern until the first batch
        pipeline_(std::move(pipeline)),
        merge_(merge),
        pipeline_key_(std::move(pipeline_key)),
        merge_key_(merge ? pipeline_key_ : std::vector<std::string>()),
        ledger_{bq_quote_identifier(project_) + "." + bq_quote_identifier(dataset_) + ".",
                "",
                bq_quote_literal,
                "STRING",
                "INT64",
                bq_quote_identifier,
                /*like_escapes_with_backslash=*/true},
        // One fence for the pipeline: beside its table, or (several streams) named after its table pattern.
        fence_(FenceSql{ledger_, qualified(tables_as_one_name(table_) + std::string(kFenceSuffix)), target(), pipeline_,
                        tables_.per_stream() ? tables_.target_like([this](std::string_view t) { return qualified(t); })
                                             : std::string()},
               {fence_reader([this](const std::string& sql) { return client_.query(sql); }),
                [this](const std::string& sql) { return fence_dml(sql); }},
               where()) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  // The streams of one batch land in one script transaction; batches one after another.
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  Status take_over(std::string_view lineage) override;

 private:
  std::string qualified(std::string_view table) const {
    return bq_quote_identifier(fmt::format("{}.{}.{}", project_, dataset_, table));
  }
  std::string target() const { return qualified(table_); }
  bool merging() const { return merge_; }
  MergeSql merge_sql(const std::string& stage) const {
    return {target(),
            qualified(table_ + std::string(kTombstoneSuffix)),
            qualified(stage),
            merge_key_,
            columns_,
            bq_column_rules(),
            std::string(kTokenType),
            "EXCEPT",
            /*qualify_needs_where=*/true};
  }
  std::string where() const { return fmt::format("{}: table {}.{}", client_.where(), dataset_, table_); }
  const LedgerDialect& ledger() const { return ledger_; }
  const FenceSql& fence() const { return fence_.sql(); }
  Status fence_dml(const std::string& sql);
  std::string not_landed(const BatchId& id) const { return fence_.unlanded(id, target()); }
  // The staging table of one batch (its load job's destination): the BatchId in hex, so a stage a killed run left
  // behind can be matched with the ledger (drop_stages_left_behind).
  static constexpr std::string_view kStageInfix = "__skippr_stage_";
  std::string stage_name(const BatchId& id) const {
    std::string hex;
    for (unsigned char c : id.str()) hex += fmt::format("{:02x}", c);
    return table_ + std::string(kStageInfix) + hex;
  }
  Status drop_stages_left_behind(const BatchId& landing);
  Status describe();
  // Points table_ (and what is known of it) at the table `batch`'s stream lands in, and merge_key_ at its key.
  Status use_table_of(const Batch& batch);
  Status prepare_table(const Batch& batch);
  // One part of a batch, loaded into its stage, with the statements that land it inside the batch's transaction.
  struct Prepared {
    std::string target;  // the table it lands in, as the ledger names it
    std::string stage;   // its staging table (unqualified); empty without rows
    std::vector<std::string> inside;
    uint64_t rejected = 0;
  };
  // nullopt when the ledger holds the part already.
  Result<std::optional<Prepared>> prepare(const BatchToLand& item);
  // One script job: the fence, then every part's statements, in one transaction.
  Status send_transaction(const BatchId& id, std::span<const Prepared> parts);
  Result<WriteOutcome> land(const BatchToLand& item) override;
  // Runs the job of `kind` for `key` under the first id of its attempts that has not failed.
  template <class Run>
  Status run_attempts(std::string_view kind, const std::string& key, Run&& run);

  BigQueryClient client_;
  std::string project_, dataset_;
  StreamTables tables_;
  std::string table_;  // the table being landed in (use_table_of)
  std::string pipeline_;
  bool merge_ = false;                     // landing: merge_by_key
  std::vector<std::string> pipeline_key_;  // the pipeline's primary_key (empty: each batch carries its own)
  std::vector<std::string> merge_key_;     // the key of the batch being landed
  LedgerDialect ledger_;
  DestinationFence fence_;
  bool opened_ = false;
  bool stages_checked_ = false;                           // drop_stages_left_behind ran in this process
  std::vector<TableColumn> columns_;                      // table_'s, as last described (empty: not there yet)
  KnownPerTable<std::vector<TableColumn>> other_tables_;  // the same of the stream tables other than table_
};

Status BigQuerySink::open() {
  if (opened_) return ok();
  SKIPPR_TRY(client_.check_dataset(dataset_));
  auto ledger_table = client_.query(fmt::format(
      "CREATE TABLE IF NOT EXISTS {}{} (target_table STRING NOT NULL, batch_id STRING NOT NULL, pipeline STRING, "
      "lineage STRING, epoch INT64, seq INT64, `rows` INT64, position_after STRING, landed_at TIMESTAMP DEFAULT "
      "CURRENT_TIMESTAMP())",
      ledger().schema_prefix, bq_quote_identifier(kLedgerTable)));
  if (!ledger_table) return std::unexpected(ledger_table.error());
  auto fence_table = client_.query(fence().create());
  if (!fence_table) return std::unexpected(fence_table.error());
  if (!tables_.per_stream()) SKIPPR_TRY(describe());
  opened_ = true;
  return ok();
}

// A run killed after a batch's transaction and before the drop of its stage leaves the stage; a replay drops it, but
// with DATA_DIR lost nothing replays it. A run killed between a load and its transaction leaves a stage whose batch,
// with DATA_DIR lost, is read again under a new lineage and never lands under that id. So before the first batch a
// process lands (`landing`), the pipeline's stages go when the ledger holds their batch or their lineage is not
// `landing`'s: the WAL holds one lineage, so only stages of that lineage can still be needed by a replay.
Status BigQuerySink::drop_stages_left_behind(const BatchId& landing) {
  auto tables = client_.list_tables(dataset_);
  if (!tables) return std::unexpected(tables.error());
  for (const auto& name : *tables) {
    // <table>__skippr_stage_<hex>, of this pipeline's table (or one of its stream tables).
    const size_t infix = name.rfind(kStageInfix);
    if (infix == std::string::npos) continue;
    const std::string table = name.substr(0, infix);
    if (tables_.per_stream() ? !tables_.may_name(table) : table != table_) continue;
    const std::string hex = name.substr(infix + kStageInfix.size());
    if (hex.empty() || hex.size() % 2 != 0 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
      continue;  // not one of ours
    }
    std::string id;
    for (size_t i = 0; i < hex.size(); i += 2) id += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    // "pipeline/lineage/epoch/seq"
    const size_t slash = id.find('/');
    if (slash == std::string::npos || id.substr(0, slash) != landing.pipeline) continue;  // another pipeline's
    const std::string lineage = id.substr(slash + 1, id.find('/', slash + 1) - slash - 1);
    auto held = client_.query(fmt::format("SELECT 1 FROM {}{} WHERE target_table = {} AND batch_id = {}",
                                          ledger().schema_prefix, bq_quote_identifier(kLedgerTable),
                                          bq_quote_literal(qualified(table)), bq_quote_literal(id)));
    if (!held) return std::unexpected(held.error());
    if (held->rows.empty() && lineage == landing.lineage) continue;
    auto dropped = client_.query(fmt::format("DROP TABLE IF EXISTS {}", qualified(name)));
    if (!dropped) return std::unexpected(dropped.error());
  }
  return ok();
}

Status BigQuerySink::describe() {
  auto fields = client_.table_fields(dataset_, table_);
  if (!fields) return std::unexpected(fields.error());
  columns_.clear();
  // tables.get spells types the legacy way; DDL (the tombstone table's keys) needs GoogleSQL's names.
  static const std::map<std::string, std::string, std::less<>> kGoogleSql = {
      {"INTEGER", "INT64"}, {"FLOAT", "FLOAT64"}, {"BOOLEAN", "BOOL"}};
  if (*fields) {
    for (auto& [name, type] : **fields) {
      auto google = kGoogleSql.find(type);
      columns_.push_back({name, google == kGoogleSql.end() ? type : google->second});
    }
  }
  return ok();
}

Result<std::optional<LedgerTip>> BigQuerySink::ledger_tip() {
  SKIPPR_TRY(open());
  // After a takeover, every stage of another lineage is dead: a load job of a killed process may have made one after
  // the run that followed it looked (jobs outlive their client), and no batch of that lineage lands any more.
  if (!fence_.held().empty()) SKIPPR_TRY(drop_stages_left_behind(BatchId{pipeline_, 0, 0, fence_.held()}));
  auto rows = client_.query(tables_.per_stream() ? ledger_tip_any_table_sql(ledger(), fence().target_like, pipeline_)
                                                 : ledger_tip_sql(ledger(), target(), pipeline_));
  if (!rows) return fail(rows.error().kind, fmt::format("reading the ledger of {}: {}", where(), rows.error().message));
  return ledger_tip_of(rows->rows);
}

// A job of a killed process runs on, and commits, in BigQuery: the fence row goes to `lineage` before the ledger tip
// is read (sinks/kit/destination_fence.h). The UPDATE runs outside a transaction, so BigQuery queues it behind every
// landing transaction still running on the fence instead of cancelling either; once it has run, a landing of an
// earlier lineage writes nothing, and the tip read next is final.
Status BigQuerySink::take_over(std::string_view lineage) {
  SKIPPR_TRY(open());
  return fence_.take(lineage);
}

// A statement on the fence outside a transaction. Should BigQuery answer a concurrent update instead of queueing it,
// it is sent again after a pause: it changes nothing the second time that the first did not.
Status BigQuerySink::fence_dml(const std::string& sql) {
  double pause = 0.5;
  for (int attempt = 1;; ++attempt) {
    auto done = client_.query(sql);
    if (done) return ok();
    if (!concurrent_update(done.error().message)) return std::unexpected(done.error());
    if (attempt == kFenceAttempts) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("{}: the fence of the table stays busy: {}", where(), done.error().message));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(pause * 2, 8.0);
  }
}

Status BigQuerySink::use_table_of(const Batch& batch) {
  if (merging()) {
    merge_key_ = merge_key_of(batch, pipeline_key_);
    if (merge_key_.empty()) return no_merge_key(batch, where());
  }
  // Table names are case-sensitive in BigQuery: only the same spelling is the same table.
  auto known = other_tables_.enter(tables_, batch.stream, tables_.table_for(batch.stream), same_name, table_, columns_);
  if (!known) return std::unexpected(known.error());
  return *known ? ok() : describe();
}

Status BigQuerySink::prepare_table(const Batch& batch) {
  if (columns_.empty()) {
    const auto definitions =
        new_table_definitions(batch.schema, bq_column_rules(), bq_new_column_type, merging() ? kTokenType : "");
    auto created =
        client_.query(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", target(), fmt::join(definitions, ", ")));
    if (!created) return std::unexpected(created.error());
    SKIPPR_TRY(describe());
  }
  if (merging()) SKIPPR_TRY(check_merge_rows(batch, merge_key_, bq_column_rules(), where()));
  SKIPPR_TRY(check_key_columns(columns_, merge_key_, bq_column_rules(), where()));
  auto missing = fields_to_add(columns_, batch.schema, bq_column_rules(), where(), merging());
  if (!missing) return std::unexpected(missing.error());
  if (missing->empty()) return ok();
  for (const auto& field : *missing) {
    auto added = client_.query(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}", target(),
                                           bq_quote_identifier(field.name), bq_new_column_type(field.type)));
    if (!added) return std::unexpected(added.error());
  }
  return describe();
}

template <class Run>
Status BigQuerySink::run_attempts(std::string_view kind, const std::string& key, Run&& run) {
  std::string error;
  int failed_here = 0;
  for (int attempt = 0; attempt < kJobIds; ++attempt) {
    const std::string job_id = bigquery_job_id(fmt::format("skippr_{}_", kind), fmt::format("{}/{}", key, attempt));
    bool existed = false;
    auto done = run(job_id, &error, &existed);
    if (!done) return std::unexpected(done.error());
    if (*done) return ok();
    if (!existed && ++failed_here >= kJobAttempts) break;  // ids spent by earlier runs do not count here
    // A transaction cancelled for a concurrent one: the next attempt waits a moment for that one to end.
    if (!existed && concurrent_update(error)) std::this_thread::sleep_for(std::chrono::milliseconds(500 * failed_here));
  }
  return fail(transient_job_error(error) ? ErrorKind::kUnavailable : ErrorKind::kConfig,
              fmt::format("{}: the {} job of a batch failed {} times: {}", where(), kind, failed_here, error));
}

Result<std::optional<BigQuerySink::Prepared>> BigQuerySink::prepare(const BatchToLand& item) {
  SKIPPR_TRY(use_table_of(item.batch));
  if (!stages_checked_) {
    SKIPPR_TRY(drop_stages_left_behind(item.id));
    stages_checked_ = true;
  }
  Prepared p;
  p.target = target();
  const std::string stage = stage_name(item.id);
  if (item.maybe_landed) {
    auto held = client_.query(ledger_has_sql(ledger(), target(), item.id));
    if (!held) return std::unexpected(held.error());
    if (!held->rows.empty()) {
      // A run that died after the transaction may have left the stage behind.
      auto dropped = client_.query(fmt::format("DROP TABLE IF EXISTS {}", qualified(stage)));
      if (!dropped) return std::unexpected(dropped.error());
      return std::optional<Prepared>();
    }
  }
  SKIPPR_TRY(prepare_table(item.batch));
  auto conformed = conform_batch(item.batch, columns_, bq_column_rules(), where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : item.batch;
  const std::vector<RejectedRow> rejected = *conformed ? (*conformed)->rejected : std::vector<RejectedRow>();
  if (!rejected.empty()) {
    auto made = client_.query(fmt::format(
        "CREATE TABLE IF NOT EXISTS {} (batch_id STRING NOT NULL, `row` INT64 NOT NULL, reason STRING, record "
        "STRING, rejected_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP())",
        qualified(table_ + std::string(kRejectedSuffix))));
    if (!made) return std::unexpected(made.error());
  }

  const std::string key = target() + "|" + item.id.str();
  std::vector<std::string> names;
  if (rows.rows > 0) {
    p.stage = stage;
    nlohmann::json fields = nlohmann::json::array();
    for (const Field& field : rows.schema.fields) {
      const TableColumn* column =
          merging() && is_change_field(field.name) ? nullptr : find_column(columns_, field.name, bq_column_rules());
      fields.push_back({{"name", field.name},
                        {"type", column ? column->type : bq_new_column_type(field.type)},
                        {"mode", "NULLABLE"}});
      names.push_back(bq_quote_identifier(field.name));
    }
    // merge_by_key: each row's index in the batch, the tie breaker of its order token.
    if (merging()) fields.push_back({{"name", kRowNumberColumn}, {"type", "INT64"}, {"mode", "NULLABLE"}});
    std::string ndjson;
    for (size_t r = 0; r < rows.rows; ++r) {
      append_row_json(rows, r, ndjson);
      if (merging()) {
        ndjson.pop_back();  // the object's closing brace
        ndjson += fmt::format("{}\"{}\":{}}}", rows.schema.fields.empty() ? "" : ",", kRowNumberColumn, r);
      }
      ndjson += '\n';
    }
    SKIPPR_TRY(run_attempts("load", key, [&](const std::string& job_id, std::string* error, bool* existed) {
      return client_.run_load_job(job_id, dataset_, stage, fields, ndjson, "WRITE_TRUNCATE", error, existed);
    }));
  }
  if (rows.rows > 0 && merging()) {
    // DDL may not run inside a transaction in BigQuery.
    auto made = client_.query(tombstones_create_sql(merge_sql(stage)));
    if (!made) return std::unexpected(made.error());
  }
  // Every INSERT is conditional on the ledger and on the batch's lineage holding the fence: a transaction of a
  // lineage that was taken over writes nothing. The MERGE of merge_by_key needs neither: replaying it changes nothing.
  if (rows.rows > 0 && merging()) {
    for (auto& sql : merge_apply_sql(rows, item.id, merge_sql(stage), has_deletes(rows)))
      p.inside.push_back(std::move(sql));
  } else if (rows.rows > 0) {
    p.inside.push_back(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} WHERE {}", target(), fmt::join(names, ", "),
                                   fmt::join(names, ", "), qualified(stage), not_landed(item.id)));
  }
  for (auto& sql : rejects_insert_sql(qualified(table_ + std::string(kRejectedSuffix)), item.id.str(), rejected,
                                      bq_quote_literal, bq_quote_identifier, not_landed(item.id))) {
    p.inside.push_back(std::move(sql));
  }
  const std::string held = item.id.lineage.empty() ? "" : fence().held(item.id.lineage);
  p.inside.push_back(
      ledger_insert_unless_landed_sql(ledger(), target(), item.id, item.batch.rows, item.position_after, held));
  p.rejected = rejected.size();
  return std::optional(std::move(p));
}

Status BigQuerySink::send_transaction(const BatchId& id, std::span<const Prepared> parts) {
  // The first statement updates the fence row, so two landing transactions cannot run side by side.
  std::vector<std::string> statements = {"BEGIN TRANSACTION", fence().hold()};
  for (const auto& part : parts) statements.insert(statements.end(), part.inside.begin(), part.inside.end());
  statements.push_back("COMMIT TRANSACTION");
  const std::string script = fmt::format("{};", fmt::join(statements, ";\n"));
  // One part: named by its table, as before streams. Several: by the pipeline's table pattern (the same parts come
  // again on a retry: all of them landed together, or none).
  const std::string key = (parts.size() == 1 ? parts.front().target : qualified(tables_.pattern())) + "|" + id.str();
  failpoint::hit(failpoint::kSinkInTransaction);
  SKIPPR_TRY(run_attempts("land", key, [&](const std::string& job_id, std::string* error, bool* existed) {
    return client_.run_query_job(job_id, script, error, existed);
  }));
  failpoint::hit(failpoint::kSinkAfterCommit);
  // A job that succeeded with the fence lost (taken over while this process ran) wrote nothing.
  if (!id.lineage.empty()) SKIPPR_TRY(fence_.confirm_landed(id, parts.back().target));
  for (const auto& part : parts) {
    if (part.stage.empty()) continue;
    auto dropped = client_.query(fmt::format("DROP TABLE IF EXISTS {}", qualified(part.stage)));
    if (!dropped) return std::unexpected(dropped.error());
  }
  return ok();
}

Result<std::vector<BatchLanded>> BigQuerySink::write_group(std::span<const BatchToLand> group) {
  SKIPPR_TRY(open());
  std::vector<BatchLanded> landed(group.size(), {WriteOutcome::kAlreadyApplied, 0});
  for (size_t first = 0; first < group.size();) {
    size_t end = first + 1;  // the parts of one batch: consecutive items with its id
    while (end < group.size() && group[end].id.str() == group[first].id.str()) ++end;
    // Before anything of the batch is written (a table, a column, a stage): a lineage that lost the fence stops here,
    // and two streams that would share a table stop the batch whole.
    SKIPPR_TRY(fence_.hold(group[first].id));
    for (size_t i = first; i < end; ++i) SKIPPR_TRY(use_table_of(group[i].batch));
    std::vector<Prepared> parts;
    std::vector<size_t> positions;  // of parts' items in the group
    for (size_t i = first; i < end; ++i) {
      auto prepared = prepare(group[i]);
      if (!prepared) return std::unexpected(prepared.error());
      if (!*prepared) continue;
      parts.push_back(std::move(**prepared));
      positions.push_back(i);
    }
    if (!parts.empty()) SKIPPR_TRY(send_transaction(group[first].id, parts));
    for (size_t i = 0; i < parts.size(); ++i) landed[positions[i]] = {WriteOutcome::kApplied, parts[i].rejected};
    first = end;
  }
  return landed;
}

Result<WriteOutcome> BigQuerySink::land(const BatchToLand& item) {
  last_rejected_ = 0;
  auto landed = write_group(std::span(&item, 1));
  if (!landed) return std::unexpected(landed.error());
  last_rejected_ = landed->front().rows_rejected;
  return landed->front().outcome;
}

}  // namespace

ConnectorSpec bigquery_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "BigQuery";
  spec.is_source = false;
  spec.summary = "a BigQuery table (load job into a stage, then a transaction with the ledger; job ids from BatchId)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;        // all of a batch's tables in one script transaction
  spec.max_identifier_bytes = 300;  // BigQuery column names hold 300 characters; counted in bytes to be safe
  spec.params = {
      {"project", ParamType::kString, true, nullptr, "the Google Cloud project that runs the jobs and holds the table"},
      {"dataset", ParamType::kString, true, nullptr, "the dataset; it must exist"},
      {"table", ParamType::kString, false, nullptr,
       "the target table, created from the first batch; may hold {stream} (default for a source of several streams: "
       "{stream}, each stream in a table of its own)"},
      {"credentials_file", ParamType::kPath, true, nullptr, "a service-account JSON key (a secret)"},
      {"location", ParamType::kString, false, "US", "where the dataset and the jobs live"},
      {"endpoint", ParamType::kString, false, "", "the API's origin; empty: https://bigquery.googleapis.com"},
      {"timeout_seconds", ParamType::kDouble, false, 120.0, "how long one HTTP request may take"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string where = fmt::format("sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend && ctx.landing != Landing::kMergeByKey) {
      return fail(ErrorKind::kConfig, fmt::format("{}: landing {} is not built for BigQuery yet; use append or "
                                                  "merge_by_key",
                                                  where, to_string(ctx.landing)));
    }
    GcsOptions options;
    options.credentials_file = ctx.params.value("credentials_file", std::string());
    auto account = load_google_service_account(options, where);
    if (!account) return std::unexpected(account.error());
    BigQueryConfig config;
    config.project = ctx.params.value("project", std::string());
    config.location = ctx.params.value("location", std::string("US"));
    config.endpoint = ctx.params.value("endpoint", std::string());
    config.account = std::move(*account);
    config.where = where;
    config.request_timeout_seconds = ctx.params.value("timeout_seconds", 120.0);
    if (!config.endpoint.empty() && !config.endpoint.starts_with("http://") &&
        !config.endpoint.starts_with("https://")) {
      return fail(ErrorKind::kConfig, fmt::format("{}: endpoint must start with https:// (or http://)", where));
    }
    auto tables = StreamTables::make(where, "table", StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    const std::string project = config.project;
    return std::make_unique<BigQuerySink>(BigQueryClient(std::move(config)), project,
                                          ctx.params.value("dataset", std::string()), std::move(*tables), ctx.pipeline,
                                          ctx.landing == Landing::kMergeByKey, ctx.primary_key);
  };
  return spec;
}

}  // namespace skippr
