#include "sinks/snowflake/snowflake_sink.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "clients/snowflake/snowflake_client.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "sinks/batch_ledger.h"
#include "sinks/conform_batch.h"
#include "sinks/schema_evolution.h"
#include "sinks/snowflake/sf_types.h"

namespace skippr {
namespace {

// Snowflake's limit on one statement's text is 1 MB; rows are cut into INSERTs below it.
constexpr size_t kStatementBytes = 900 * 1024;

ColumnRules sf_column_rules() {
  return {[](std::string_view a, std::string_view b) { return a == b; }, sf_column_accepts, sf_quote_identifier};
}

class SnowflakeSink final : public Sink {
 public:
  SnowflakeSink(SnowflakeClient client, std::string database, std::string schema, std::string table,
                std::string pipeline)
      : client_(std::move(client)),
        database_(std::move(database)),
        schema_(std::move(schema)),
        table_(std::move(table)),
        pipeline_(std::move(pipeline)) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) override {
    return land({batch, id, position_after, /*maybe_landed=*/true});
  }
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override {
    std::vector<BatchLanded> landed;
    for (const auto& item : group) {
      auto outcome = land(item);
      if (!outcome) return std::unexpected(outcome.error());
      landed.push_back({*outcome, *outcome == WriteOutcome::kApplied ? last_rejected_ : 0});
    }
    return landed;
  }
  uint64_t rows_rejected_by_last_write() const override { return last_rejected_; }

 private:
  std::string prefix() const { return sf_quote_identifier(database_) + "." + sf_quote_identifier(schema_) + "."; }
  std::string target() const { return prefix() + sf_quote_identifier(table_); }
  std::string rejects() const { return prefix() + sf_quote_identifier(table_ + std::string(kRejectedSuffix)); }
  std::string where() const { return fmt::format("{}: table {}.{}.{}", client_.where(), database_, schema_, table_); }
  LedgerDialect ledger() const { return {prefix(), "", sf_quote_literal, "VARCHAR", "NUMBER(20,0)"}; }
  // The ledger's own condition: the batch is not there yet (every write of the transaction carries it).
  std::string not_landed(const BatchId& id) const {
    return fmt::format("NOT EXISTS ({})", ledger_has_sql(ledger(), target(), id));
  }
  Status describe();
  Status prepare_table(const Batch& batch);
  Result<bool> ledger_has(const BatchId& id);
  Result<WriteOutcome> land(const BatchToLand& item);
  // The INSERT ... SELECT ... FROM VALUES statements of `rows` (each below kStatementBytes), every one conditional.
  std::vector<std::string> insert_statements(const Batch& rows, const BatchId& id) const;

  SnowflakeClient client_;
  std::string database_, schema_, table_, pipeline_;
  bool opened_ = false;
  std::vector<TableColumn> columns_;  // the target's, as last described (empty: not there yet)
  bool rejects_ready_ = false;
  uint64_t last_rejected_ = 0;
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
  if (rows->rows.empty()) return std::optional<LedgerTip>();
  const auto& row = rows->rows.front();
  return std::optional<LedgerTip>(
      LedgerTip{row.at(0).value_or(""), Position{row.at(1).value_or("")}, std::stoull(row.at(2).value_or("0"))});
}

Result<bool> SnowflakeSink::ledger_has(const BatchId& id) {
  auto rows = client_.query(ledger_has_sql(ledger(), target(), id));
  if (!rows) return std::unexpected(rows.error());
  return !rows->rows.empty();
}

Status SnowflakeSink::prepare_table(const Batch& batch) {
  if (columns_.empty()) {
    std::string sql = fmt::format("CREATE TABLE IF NOT EXISTS {} (", target());
    for (size_t f = 0; f < batch.schema.fields.size(); ++f) {
      const Field& field = batch.schema.fields[f];
      sql += fmt::format("{}{} {}", f ? ", " : "", sf_quote_identifier(field.name), sf_new_column_type(field.type));
    }
    SKIPPR_TRY(client_.query(sql + ")"));
    SKIPPR_TRY(describe());
  }
  auto missing = fields_to_add(columns_, batch.schema, sf_column_rules(), where(), /*skip_change_fields=*/false);
  if (!missing) return std::unexpected(missing.error());
  if (missing->empty()) return ok();
  // DDL commits on its own in Snowflake, so it runs before the batch's transaction (IF NOT EXISTS: a retry is fine).
  for (const auto& field : *missing) {
    SKIPPR_TRY(client_.query(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}", target(),
                                         sf_quote_identifier(field.name), sf_new_column_type(field.type))));
  }
  return describe();
}

std::vector<std::string> SnowflakeSink::insert_statements(const Batch& rows, const BatchId& id) const {
  std::string columns, converted, aliases;
  for (size_t f = 0; f < rows.schema.fields.size(); ++f) {
    const Field& field = rows.schema.fields[f];
    const TableColumn* column = find_column(columns_, field.name, sf_column_rules());
    const std::string alias = fmt::format("c{}", f);
    columns += (f ? ", " : "") + sf_quote_identifier(field.name);
    converted += (f ? ", " : "") + sf_convert("v." + alias, column ? column->type : "VARCHAR");
    aliases += (f ? ", " : "") + alias;
  }
  const std::string head = fmt::format("INSERT INTO {} ({}) SELECT {} FROM (VALUES ", target(), columns, converted);
  const std::string tail = fmt::format(") AS v({}) WHERE {}", aliases, not_landed(id));
  std::vector<std::string> statements;
  std::string sql;
  for (size_t r = 0; r < rows.rows; ++r) {
    if (sql.empty()) sql = head;
    sql += sql.size() == head.size() ? "(" : ", (";
    for (size_t f = 0; f < rows.columns.size(); ++f) {
      if (f) sql += ", ";
      sf_append_literal(rows.columns[f], r, sql);
    }
    sql += ')';
    if (sql.size() > kStatementBytes) statements.push_back(std::move(sql += tail)), sql.clear();
  }
  if (!sql.empty()) statements.push_back(sql + tail);
  return statements;
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

  std::vector<std::string> statements = {"BEGIN TRANSACTION"};
  if (rows.rows > 0) {
    for (auto& sql : insert_statements(rows, item.id)) statements.push_back(std::move(sql));
  }
  for (auto& sql : rejects_insert_sql(rejects(), item.id.str(), rejected, sf_quote_literal)) {
    statements.push_back(std::move(sql));
  }
  // The ledger row last, on the same condition: a second run of this request (or of an overlapping one) adds nothing.
  std::string ledger_row = ledger_insert_sql(ledger(), target(), item.id, item.batch.rows, item.position_after);
  const size_t values = ledger_row.find(") VALUES (");
  ledger_row = ledger_row.substr(0, values + 1) + " SELECT " + ledger_row.substr(values + 10);
  ledger_row.pop_back();  // the VALUES list's closing parenthesis
  statements.push_back(ledger_row + " WHERE " + not_landed(item.id));
  statements.push_back("COMMIT");

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
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("{}: landing {} is not built for Snowflake yet; use append", where,
                                                  to_string(ctx.landing)));
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
    return std::make_unique<SnowflakeSink>(std::move(*client), ctx.params.value("database", std::string()),
                                           ctx.params.value("schema", std::string("PUBLIC")),
                                           ctx.params.value("table", std::string()), ctx.pipeline);
  };
  return spec;
}

}  // namespace skippr
