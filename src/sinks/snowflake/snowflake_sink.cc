#include "sinks/snowflake/snowflake_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <sstream>

#include "clients/snowflake/snowflake_client.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "sinks/batch_ledger.h"
#include "sinks/change_fields.h"
#include "sinks/conform_batch.h"
#include "sinks/merge_sql.h"
#include "sinks/per_batch_sink.h"
#include "sinks/schema_evolution.h"
#include "sinks/snowflake/sf_types.h"

namespace skippr {
namespace {

// Snowflake's limit on one statement's text is 1 MB; rows are cut into INSERTs below it.
constexpr size_t kStatementBytes = 900 * 1024;
// merge_by_key stages each batch in a temporary table of the request's session (DDL: before the transaction).
constexpr std::string_view kStageTable = "_skippr_stage";
constexpr std::string_view kTokenType = "NUMBER(38,0)";

ColumnRules sf_column_rules() {
  return {[](std::string_view a, std::string_view b) { return a == b; }, sf_column_accepts, sf_quote_identifier};
}

class SnowflakeSink final : public PerBatchSink {
 public:
  SnowflakeSink(SnowflakeClient client, std::string database, std::string schema, std::string table,
                std::string pipeline, std::vector<std::string> merge_key)
      : client_(std::move(client)),
        database_(std::move(database)),
        schema_(std::move(schema)),
        table_(std::move(table)),
        pipeline_(std::move(pipeline)),
        merge_key_(std::move(merge_key)) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;

 private:
  std::string prefix() const { return sf_quote_identifier(database_) + "." + sf_quote_identifier(schema_) + "."; }
  std::string target() const { return prefix() + sf_quote_identifier(table_); }
  std::string rejects() const { return prefix() + sf_quote_identifier(table_ + std::string(kRejectedSuffix)); }
  std::string tombstones() const { return prefix() + sf_quote_identifier(table_ + std::string(kTombstoneSuffix)); }
  bool merging() const { return !merge_key_.empty(); }
  std::string where() const { return fmt::format("{}: table {}.{}.{}", client_.where(), database_, schema_, table_); }
  LedgerDialect ledger() const { return {prefix(), "", sf_quote_literal, "VARCHAR", "NUMBER(20,0)"}; }
  // The ledger's own condition: the batch is not there yet (every write of the transaction carries it).
  std::string not_landed(const BatchId& id) const {
    return fmt::format("NOT EXISTS ({})", ledger_has_sql(ledger(), target(), id));
  }
  Status describe();
  Status prepare_table(const Batch& batch);
  Result<bool> ledger_has(const BatchId& id);
  Result<WriteOutcome> land(const BatchToLand& item) override;
  // The INSERT ... SELECT ... FROM VALUES statements of `rows` into `into`, whose columns are `columns` (each value
  // converted to its column's type), each below kStatementBytes and ending in `condition` (may be empty). With
  // `row_numbers`, each row's index in the batch goes into the last column of `columns`.
  std::vector<std::string> insert_statements(const Batch& rows, const std::string& into,
                                             const std::vector<TableColumn>& columns, const std::string& condition,
                                             bool row_numbers) const;
  // The statements that land a merge_by_key batch: staging (before the transaction) and the MERGE (inside it).
  void merge_statements(const Batch& rows, const BatchId& id, std::vector<std::string>& before,
                        std::vector<std::string>& inside) const;

  SnowflakeClient client_;
  std::string database_, schema_, table_, pipeline_;
  std::vector<std::string> merge_key_;  // merge_by_key's primary key; empty: append
  bool opened_ = false;
  std::vector<TableColumn> columns_;  // the target's, as last described (empty: not there yet)
  bool rejects_ready_ = false;
};

Status SnowflakeSink::open() {
  if (opened_) return ok();
  // The first request proves the login, the warehouse and the database; the ledger is made once.
  SKIPPR_TRY(client_.query(fmt::format(
      "CREATE TABLE IF NOT EXISTS {}\"{}\" (target_table VARCHAR NOT NULL, batch_id VARCHAR NOT NULL, pipeline "
      "VARCHAR, lineage VARCHAR, epoch NUMBER(20,0), seq NUMBER(20,0), \"rows\" NUMBER(20,0), position_after VARCHAR, "
      "landed_at TIMESTAMP_LTZ DEFAULT CURRENT_TIMESTAMP(), PRIMARY KEY (target_table, batch_id))",
      prefix(), kLedgerTable)));
  SKIPPR_TRY(describe());
  opened_ = true;
  return ok();
}

Status SnowflakeSink::describe() {
  auto rows = client_.query(
      fmt::format("SELECT column_name, data_type FROM {}.information_schema.columns WHERE table_schema = {} AND "
                  "table_name = {} ORDER BY ordinal_position",
                  sf_quote_identifier(database_), sf_quote_literal(schema_), sf_quote_literal(table_)));
  if (!rows) return std::unexpected(rows.error());
  columns_.clear();
  for (const auto& row : rows->rows) columns_.push_back({row.at(0).value_or(""), row.at(1).value_or("")});
  return ok();
}

Result<std::optional<LedgerTip>> SnowflakeSink::ledger_tip() {
  SKIPPR_TRY(open());
  auto rows = client_.query(ledger_tip_sql(ledger(), target(), pipeline_));
  if (!rows) return fail(rows.error().kind, fmt::format("reading the ledger of {}: {}", where(), rows.error().message));
  return ledger_tip_of(rows->rows);
}

Result<bool> SnowflakeSink::ledger_has(const BatchId& id) {
  auto rows = client_.query(ledger_has_sql(ledger(), target(), id));
  if (!rows) return std::unexpected(rows.error());
  return !rows->rows.empty();
}

Status SnowflakeSink::prepare_table(const Batch& batch) {
  if (columns_.empty()) {
    std::vector<std::string> definitions;
    for (const Field& field : batch.schema.fields) {
      if (merging() && is_change_field(field.name)) continue;
      definitions.push_back(fmt::format("{} {}", sf_quote_identifier(field.name), sf_new_column_type(field.type)));
    }
    // merge_by_key keeps each row's order token.
    if (merging()) definitions.push_back(fmt::format("{} {}", sf_quote_identifier(kOrderColumn), kTokenType));
    SKIPPR_TRY(
        client_.query(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", target(), fmt::join(definitions, ", "))));
    SKIPPR_TRY(describe());
  }
  if (merging()) {
    for (const auto& key : merge_key_) {
      if (!find_column(columns_, key, sf_column_rules())) {
        return fail(ErrorKind::kConfig, fmt::format("{} has no column {} of the pipeline's primary_key; fix "
                                                    "primary_key or choose another table",
                                                    where(), sf_quote_identifier(key)));
      }
    }
  }
  auto missing = fields_to_add(columns_, batch.schema, sf_column_rules(), where(), merging());
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

void SnowflakeSink::merge_statements(const Batch& rows, const BatchId& id, std::vector<std::string>& before,
                                     std::vector<std::string>& inside) const {
  // The stage holds the batch's fields in the target's types (the change fields as text) and the row numbers.
  std::vector<TableColumn> stage;
  for (const Field& field : rows.schema.fields) {
    const TableColumn* column =
        is_change_field(field.name) ? nullptr : find_column(columns_, field.name, sf_column_rules());
    stage.push_back({field.name, column ? column->type : "VARCHAR"});
  }
  stage.push_back({std::string(kRowNumberColumn), std::string(kTokenType)});
  std::vector<std::string> definitions;
  for (const auto& c : stage) definitions.push_back(fmt::format("{} {}", sf_quote_identifier(c.name), c.type));
  const MergeSql m{target(), tombstones(),      sf_quote_identifier(kStageTable), merge_key_,
                   columns_, sf_column_rules(), std::string(kTokenType)};
  before.push_back(fmt::format("CREATE OR REPLACE TEMPORARY TABLE {} ({})", m.stage, fmt::join(definitions, ", ")));
  before.push_back(tombstones_create_sql(m));
  for (auto& sql : insert_statements(rows, m.stage, stage, "", /*row_numbers=*/true)) before.push_back(std::move(sql));
  // Replaying the MERGE changes nothing (every write is conditional on the order token), so it needs no ledger guard.
  for (auto& sql : merge_apply_sql(rows, id, m, has_deletes(rows))) inside.push_back(std::move(sql));
}

Result<WriteOutcome> SnowflakeSink::land(const BatchToLand& item) {
  SKIPPR_TRY(open());
  last_rejected_ = 0;
  // Only a batch an earlier attempt may have landed can be in the ledger; asking costs a round trip, so only then.
  if (item.maybe_landed) {
    auto held = ledger_has(item.id);
    if (!held) return std::unexpected(held.error());
    if (*held) return WriteOutcome::kAlreadyApplied;
  }
  if (merging()) SKIPPR_TRY(check_merge_rows(item.batch, merge_key_, sf_column_rules(), where()));
  SKIPPR_TRY(prepare_table(item.batch));
  auto conformed = conform_batch(item.batch, columns_, sf_column_rules(), where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : item.batch;
  const std::vector<RejectedRow> rejected = *conformed ? (*conformed)->rejected : std::vector<RejectedRow>();
  if (!rejected.empty() && !rejects_ready_) {
    SKIPPR_TRY(client_.query(fmt::format(
        "CREATE TABLE IF NOT EXISTS {} (batch_id VARCHAR NOT NULL, \"row\" NUMBER(38,0) NOT NULL, reason VARCHAR, "
        "record VARCHAR, rejected_at TIMESTAMP_LTZ DEFAULT CURRENT_TIMESTAMP())",
        rejects())));
    rejects_ready_ = true;
  }

  std::vector<std::string> statements;
  std::vector<std::string> inside;
  if (rows.rows > 0 && merging()) {
    merge_statements(rows, item.id, statements, inside);
  } else if (rows.rows > 0) {
    inside = insert_statements(rows, target(), columns_, not_landed(item.id), /*row_numbers=*/false);
  }
  statements.push_back("BEGIN TRANSACTION");
  for (auto& sql : inside) statements.push_back(std::move(sql));
  for (auto& sql : rejects_insert_sql(rejects(), item.id.str(), rejected, sf_quote_literal)) {
    statements.push_back(std::move(sql));
  }
  // The ledger row last, on the same condition: a second run of this request after the first committed adds nothing.
  // Two runs overlapping in time would both pass the condition (Snowflake enforces no key and inserts do not block
  // each other): that is what the requestId with retry=true prevents, and one process per pipeline (its lease).
  statements.push_back(
      ledger_insert_unless_landed_sql(ledger(), target(), item.id, item.batch.rows, item.position_after));
  statements.push_back("COMMIT");
  if (rows.rows > 0 && merging())
    statements.push_back(fmt::format("DROP TABLE IF EXISTS {}", sf_quote_identifier(kStageTable)));

  std::string request;
  for (const auto& sql : statements) request += sql + ";\n";
  failpoint::hit(failpoint::kSinkInTransaction);
  auto done = client_.execute(request, static_cast<int>(statements.size()),
                              snowflake_request_id(target() + "|" + item.id.str()), item.maybe_landed);
  if (!done) return std::unexpected(done.error());
  failpoint::hit(failpoint::kSinkAfterCommit);
  last_rejected_ = rejected.size();
  return WriteOutcome::kApplied;
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

}  // namespace

ConnectorSpec snowflake_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Snowflake";
  spec.is_source = false;
  spec.summary = "a Snowflake table through the SQL API v2 (key-pair JWT; rows and ledger in one transaction)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.params = {
      {"account", ParamType::kString, true, nullptr, "the account identifier (orgname-accountname, or a locator)"},
      {"user", ParamType::kString, true, nullptr, "the user whose RSA_PUBLIC_KEY matches private_key_file"},
      {"private_key_file", ParamType::kPath, true, nullptr, "the user's unencrypted PEM RSA private key (a secret)"},
      {"role", ParamType::kString, false, "", "the role; empty: the user's default"},
      {"warehouse", ParamType::kString, false, "", "the warehouse; empty: the user's default"},
      {"database", ParamType::kString, true, nullptr, "the database, as Snowflake stores its name (case-sensitive)"},
      {"schema", ParamType::kString, false, "PUBLIC", "the schema, as stored (case-sensitive)"},
      {"table", ParamType::kString, true, nullptr,
       "the target table, created from the first batch, name kept as written"},
      {"endpoint", ParamType::kString, false, "", "the API's origin; empty: https://<account>.snowflakecomputing.com"},
      {"timeout_seconds", ParamType::kDouble, false, 60.0, "how long one HTTP request may take"},
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
    auto client = SnowflakeClient::make(std::move(config));
    if (!client) return fail(ErrorKind::kConfig, fmt::format("{}: {}", where, client.error().message));
    return std::make_unique<SnowflakeSink>(
        std::move(*client), ctx.params.value("database", std::string()),
        ctx.params.value("schema", std::string("PUBLIC")), ctx.params.value("table", std::string()), ctx.pipeline,
        ctx.landing == Landing::kMergeByKey ? ctx.primary_key : std::vector<std::string>());
  };
  return spec;
}

}  // namespace skippr
