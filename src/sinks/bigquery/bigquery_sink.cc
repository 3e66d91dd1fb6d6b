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
  BigQuerySink(BigQueryClient client, std::string project, std::string dataset, std::string table, std::string pipeline,
               std::vector<std::string> merge_key)
      : client_(std::move(client)),
        project_(std::move(project)),
        dataset_(std::move(dataset)),
        table_(std::move(table)),
        pipeline_(std::move(pipeline)),
        merge_key_(std::move(merge_key)),
        target_(qualified(table_)),
        ledger_{bq_quote_identifier(project_) + "." + bq_quote_identifier(dataset_) + ".",
                "",
                bq_quote_literal,
                "STRING",
                "INT64",
                bq_quote_identifier},
        fence_(FenceSql{ledger_, qualified(table_ + std::string(kFenceSuffix)), target_, pipeline_, ""},
               {fence_reader([this](const std::string& sql) { return client_.query(sql); }),
                [this](const std::string& sql) { return fence_dml(sql); }},
               where()) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  Status take_over(std::string_view lineage) override;

 private:
  std::string qualified(std::string_view table) const {
    return bq_quote_identifier(fmt::format("{}.{}.{}", project_, dataset_, table));
  }
  const std::string& target() const { return target_; }
  bool merging() const { return !merge_key_.empty(); }
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
  std::string not_landed(const BatchId& id) const { return fence_.unlanded(id); }
  // The staging table of one batch (its load job's destination): the BatchId in hex, so a stage a killed run left
  // behind can be matched with the ledger (drop_stages_left_behind).
  std::string stage_prefix() const { return table_ + "__skippr_stage_"; }
  std::string stage_name(const BatchId& id) const {
    std::string hex;
    for (unsigned char c : id.str()) hex += fmt::format("{:02x}", c);
    return stage_prefix() + hex;
  }
  Status drop_stages_left_behind(const BatchId& landing);
  Status describe();
  Status prepare_table(const Batch& batch);
  Result<WriteOutcome> land(const BatchToLand& item) override;
  // Runs the job of `kind` for `key` under the first id of its attempts that has not failed.
  template <class Run>
  Status run_attempts(std::string_view kind, const std::string& key, Run&& run);

  BigQueryClient client_;
  std::string project_, dataset_, table_, pipeline_;
  std::vector<std::string> merge_key_;  // merge_by_key's primary key; empty: append
  std::string target_;                  // `project.dataset.table`
  LedgerDialect ledger_;
  DestinationFence fence_;
  bool opened_ = false;
  bool stages_checked_ = false;  // drop_stages_left_behind ran in this process
  std::vector<TableColumn> columns_;
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
  SKIPPR_TRY(describe());
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
    if (!name.starts_with(stage_prefix())) continue;
    const std::string hex = name.substr(stage_prefix().size());
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
                                          bq_quote_literal(target()), bq_quote_literal(id)));
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
  auto rows = client_.query(ledger_tip_sql(ledger(), target(), pipeline_));
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

Result<WriteOutcome> BigQuerySink::land(const BatchToLand& item) {
  SKIPPR_TRY(open());
  if (!stages_checked_) {
    SKIPPR_TRY(drop_stages_left_behind(item.id));
    stages_checked_ = true;
  }
  last_rejected_ = 0;
  const std::string stage = stage_name(item.id);
  if (item.maybe_landed) {
    auto held = client_.query(ledger_has_sql(ledger(), target(), item.id));
    if (!held) return std::unexpected(held.error());
    if (!held->rows.empty()) {
      // A run that died after the transaction may have left the stage behind.
      auto dropped = client_.query(fmt::format("DROP TABLE IF EXISTS {}", qualified(stage)));
      if (!dropped) return std::unexpected(dropped.error());
      return WriteOutcome::kAlreadyApplied;
    }
  }
  SKIPPR_TRY(fence_.hold(item.id));
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
  // The first statement updates the fence row (two landing transactions cannot then run side by side), and every
  // INSERT is conditional on the ledger and on the batch's lineage holding the fence: a transaction of a lineage that
  // was taken over writes nothing. The MERGE of merge_by_key needs neither: replaying it changes nothing.
  const std::string held = item.id.lineage.empty() ? "" : fence().held(item.id.lineage);
  std::vector<std::string> statements = {"BEGIN TRANSACTION", fence().hold()};
  if (rows.rows > 0 && merging()) {
    // Replaying the MERGE changes nothing (every write is conditional on the order token): no ledger guard needed.
    for (auto& sql : merge_apply_sql(rows, item.id, merge_sql(stage), has_deletes(rows)))
      statements.push_back(std::move(sql));
  } else if (rows.rows > 0) {
    statements.push_back(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} WHERE {}", target(), fmt::join(names, ", "),
                                     fmt::join(names, ", "), qualified(stage), not_landed(item.id)));
  }
  for (auto& sql : rejects_insert_sql(qualified(table_ + std::string(kRejectedSuffix)), item.id.str(), rejected,
                                      bq_quote_literal, bq_quote_identifier, not_landed(item.id))) {
    statements.push_back(std::move(sql));
  }
  statements.push_back(
      ledger_insert_unless_landed_sql(ledger(), target(), item.id, item.batch.rows, item.position_after, held));
  statements.push_back("COMMIT TRANSACTION");
  const std::string script = fmt::format("{};", fmt::join(statements, ";\n"));
  failpoint::hit(failpoint::kSinkInTransaction);
  SKIPPR_TRY(run_attempts("land", key, [&](const std::string& job_id, std::string* error, bool* existed) {
    return client_.run_query_job(job_id, script, error, existed);
  }));
  failpoint::hit(failpoint::kSinkAfterCommit);
  // A job that succeeded with the fence lost (taken over while this process ran) wrote nothing.
  if (!item.id.lineage.empty()) SKIPPR_TRY(fence_.confirm_landed(item.id));
  if (rows.rows > 0) {
    auto dropped = client_.query(fmt::format("DROP TABLE IF EXISTS {}", qualified(stage)));
    if (!dropped) return std::unexpected(dropped.error());
  }
  last_rejected_ = rejected.size();
  return WriteOutcome::kApplied;
}

}  // namespace

ConnectorSpec bigquery_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "BigQuery";
  spec.is_source = false;
  spec.summary = "a BigQuery table (load job into a stage, then a transaction with the ledger; job ids from BatchId)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.max_identifier_bytes = 300;  // BigQuery column names hold 300 characters; counted in bytes to be safe
  spec.params = {
      {"project", ParamType::kString, true, nullptr, "the Google Cloud project that runs the jobs and holds the table"},
      {"dataset", ParamType::kString, true, nullptr, "the dataset; it must exist"},
      {"table", ParamType::kString, true, nullptr, "the target table, created from the first batch"},
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
    const std::string project = config.project;
    return std::make_unique<BigQuerySink>(
        BigQueryClient(std::move(config)), project, ctx.params.value("dataset", std::string()),
        ctx.params.value("table", std::string()), ctx.pipeline,
        ctx.landing == Landing::kMergeByKey ? ctx.primary_key : std::vector<std::string>());
  };
  return spec;
}

}  // namespace skippr
