#include "sinks/synapse/synapse_sink.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "clients/azure/azure_credentials.h"
#include "clients/azure/azure_params.h"
#include "clients/azure/blob_client.h"
#include "clients/odbc/odbc_client.h"
#include "core/ascii.h"
#include "core/failpoint.h"
#include "core/redact.h"
#include "formats/compression.h"
#include "formats/object_encoding.h"
#include "sinks/kit/batch_ledger.h"
#include "sinks/kit/staged_load.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

constexpr const char* kFreeTdsDriver = "/usr/lib/x86_64-linux-gnu/odbc/libtdsodbc.so";

// T-SQL quoting: [name] with ']' doubled, N'text' with quotes doubled (NVARCHAR literals keep any character).
std::string ts_name(std::string_view name) {
  std::string out = "[";
  for (char c : name) {
    out += c;
    if (c == ']') out += ']';
  }
  return out + "]";
}
std::string ts_literal(std::string_view text) {
  std::string out = "N'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}
// A plain 'text' literal: what COPY INTO takes for its URL and its credential.
std::string ts_plain_literal(std::string_view text) { return ts_literal(text).substr(1); }

std::string folded(std::string_view name) { return ascii_lowercase(name); }

const char* ts_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "BIT";
    case Type::kInt64:
      return "BIGINT";
    case Type::kDouble:
      return "FLOAT";
    case Type::kTimestamp:
      return "DATETIME2";
    case Type::kDate:
      return "DATE";
    case Type::kString:
    case Type::kJson:
    case Type::kBinary:
      return "NVARCHAR(4000)";  // JSON as text; binary as its base64 (the CSV encoder's)
  }
  return "NVARCHAR(4000)";
}

struct SynapseConfig {
  std::string connection_string;  // holds the password: never in a message
  std::vector<std::string> secrets;
  int statement_timeout_seconds = 900;
  std::string schema;
  StreamTables tables;  // where each stream lands: one table, or a {stream} pattern (sinks/kit/stream_tables.h)
  std::string table;    // the table being landed in (use_table_of)
  std::string container;
  std::string prefix;  // the staging folder: <storage_prefix><schema>.<table>/ (the pattern's, {stream} as _streams_)
  AzureAccount storage;
};

class SynapseSink final : public GroupLandingSink {
 public:
  SynapseSink(const ConnectorContext& ctx, SynapseConfig config)
      : what_(fmt::format("sink '{}'", ctx.name)),
        pipeline_(ctx.pipeline),
        config_(std::move(config)),
        blobs_(config_.storage) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;

 private:
  std::string target() const { return ts_name(config_.schema) + "." + ts_name(config_.table); }
  std::string where() const { return fmt::format("{}: Synapse table {}", what_, target()); }
  LedgerDialect ledger() const {
    return {ts_name(config_.schema) + ".", "", ts_literal, "NVARCHAR(400)", "BIGINT", ts_name};
  }
  std::string ledger_table() const { return ts_name(config_.schema) + "." + ts_name(kLedgerTable); }
  // The staged blob of a batch (of one of its streams: the stream's table in its name).
  std::string staged_name(const BatchToLand& item) const {
    return config_.prefix + staged_csv_name(item, config_.tables.per_stream()
                                                      ? folded(config_.tables.table_for(item.batch.stream))
                                                      : std::string());
  }
  std::string staged_url(const BatchToLand& item) const {
    return fmt::format("{}/{}/{}", config_.storage.endpoint, config_.container, staged_name(item));
  }
  // Points the table (and what is known of its columns) at the one `batch`'s stream lands in; no round trip.
  Status use_table_of(const Batch& batch);
  // COPY INTO's CREDENTIAL clause: the account key or the SAS the sink itself stages with.
  std::string credential() const {
    if (!config_.storage.key.empty()) {
      return fmt::format("IDENTITY = 'Storage Account Key', SECRET = {}",
                         ts_plain_literal(azure_base64(config_.storage.key)));
    }
    return fmt::format("IDENTITY = 'Shared Access Signature', SECRET = {}", ts_plain_literal(config_.storage.sas));
  }
  // Every message the sink passes on: no password, key or SAS in it, whatever a driver or server echoed.
  Error redacted(const Error& e) const { return {e.kind, redact(e.message, config_.secrets)}; }
  // The container's staging folder, for sinks/kit/staged_load.
  StagingArea staging() {
    return {fmt::format("{}: staging in container {}", where(), config_.container),
            [this](const std::string& name, const std::string& body) -> Status {
              auto put = blobs_.put_blob_if_absent(config_.container, name, body, "application/gzip");
              if (!put) return std::unexpected(put.error());
              return ok();  // created, or already there from an earlier attempt: the same bytes either way
            },
            [this](const std::string& name) { return blobs_.delete_blob(config_.container, name); },
            [this](const std::string& prefix) { return blobs_.list_blobs(config_.container, prefix); }};
  }
  Status wait_for_commits_of_earlier_sessions();
  Result<std::set<std::string>> columns();
  Status prepare_table(const Batch& batch);
  Result<uint64_t> land_batch(const BatchToLand& item);
  Result<std::vector<BatchLanded>> write_in_transaction(std::span<const BatchToLand> group);

  std::string what_;
  std::string pipeline_;
  SynapseConfig config_;
  BlobClient blobs_;
  std::optional<OdbcConnection> conn_;
  std::set<std::string> columns_;  // the target's, lower-cased (SQL Server's names are case-insensitive)
  KnownPerTable<std::set<std::string>> other_columns_;  // the same of the other stream tables
};

Status SynapseSink::use_table_of(const Batch& batch) {
  // SQL Server's names are case-insensitive: Orders and orders are one table. Columns are read again when needed.
  auto entered = other_columns_.enter(config_.tables, batch.stream, config_.tables.table_for(batch.stream), folded,
                                      config_.table, columns_);
  if (!entered) return std::unexpected(entered.error());
  return ok();
}

Status SynapseSink::open() {
  if (conn_ && !conn_->broken()) return ok();
  conn_.reset();
  auto conn = OdbcConnection::connect(config_.connection_string, what_);
  if (!conn) return std::unexpected(redacted(conn.error()));
  auto prefixed = [&](const Error& e) {
    return fail(e.kind, redact(fmt::format("{}: {}", where(), e.message), config_.secrets));
  };
  // Any error inside a transaction rolls all of it back, so no half-landed batch can be committed after a failure.
  for (const std::string& sql : {
           std::string("SET XACT_ABORT ON"),
           fmt::format("IF SCHEMA_ID({}) IS NULL EXEC({})", ts_literal(config_.schema),
                       ts_literal(fmt::format("CREATE SCHEMA {}", ts_name(config_.schema)))),
           // A DEFAULT takes constants only in a dedicated SQL pool: landed_at is written by the INSERT.
           fmt::format("IF OBJECT_ID({}, N'U') IS NULL CREATE TABLE {} (target_table NVARCHAR(400) NOT NULL, batch_id "
                       "NVARCHAR(400) NOT NULL, pipeline NVARCHAR(400), lineage NVARCHAR(64), epoch BIGINT, seq "
                       "BIGINT, [rows] BIGINT, position_after NVARCHAR(4000), landed_at DATETIME2)",
                       ts_literal(ledger_table()), ledger_table()),
       }) {
    if (auto st = conn->execute(sql); !st) return prefixed(st.error());
  }
  conn->set_statement_timeout(config_.statement_timeout_seconds);
  conn_ = std::move(*conn);
  columns_.clear();
  other_columns_.clear();
  if (auto st = wait_for_commits_of_earlier_sessions(); !st) return prefixed(st.error());
  return sweep_staged(staging(), config_.prefix + pipeline_ + "-");
}

// Synapse reads READ UNCOMMITTED (or, with READ_COMMITTED_SNAPSHOT, the last committed state) and enforces no key,
// so nothing makes a ledger check wait for a transaction still committing in another session. After a lost answer
// or a killed process, the COMMIT of the earlier session may still run on the server: the ledger would show its
// batch (not committed yet) or not show it (committed a moment later), and either reading could lose or repeat the
// batch. So before the first ledger check, a new connection waits until no COMMIT of another session of this login
// still runs.
Status SynapseSink::wait_for_commits_of_earlier_sessions() {
  const std::string sql =
      "SELECT COUNT(*) FROM sys.dm_pdw_exec_requests r JOIN sys.dm_pdw_exec_sessions s ON r.session_id = s.session_id "
      "WHERE s.login_name = SUSER_SNAME() AND r.session_id <> SESSION_ID() AND r.status IN ('Running', 'Suspended') "
      "AND r.command LIKE 'COMMIT%'";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(config_.statement_timeout_seconds);
  while (true) {
    auto rows = conn_->query(sql);
    if (!rows) return std::unexpected(rows.error());
    if (rows->empty() || rows->front().front().value_or("0") == "0") return ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return fail(ErrorKind::kUnavailable, "a COMMIT of an earlier session of this login is still running; retried");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

Result<std::optional<LedgerTip>> SynapseSink::ledger_tip() {
  SKIPPR_TRY(open());
  std::string mine = fmt::format("target_table = {} AND pipeline = {}", ts_literal(target()), ts_literal(pipeline_));
  if (config_.tables.per_stream()) {
    // Every table of the pattern. '[' opens a character class in T-SQL's LIKE: escaped too.
    std::string like =
        config_.tables.target_like([this](std::string_view t) { return ts_name(config_.schema) + "." + ts_name(t); });
    for (size_t at = 0; (at = like.find('[', at)) != std::string::npos; at += 2) like.insert(at, 1, kLikeEscape);
    mine = fmt::format("target_table LIKE {} ESCAPE '{}' AND pipeline = {}", ts_literal(like), kLikeEscape,
                       ts_literal(pipeline_));
  }
  auto rows = conn_->query(fmt::format(
      "SELECT TOP (1) batch_id, position_after, CAST((SELECT max(epoch) FROM {0} WHERE {1}) AS NVARCHAR(40)) FROM "
      "{0} WHERE {1} ORDER BY epoch DESC, seq DESC",
      ledger_table(), mine));
  if (!rows) return std::unexpected(redacted(rows.error()));
  return ledger_tip_of(*rows);
}

Result<std::set<std::string>> SynapseSink::columns() {
  auto rows = conn_->query(
      fmt::format("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
                  ts_literal(config_.schema), ts_literal(config_.table)));
  if (!rows) return std::unexpected(rows.error());
  std::set<std::string> names;
  for (const auto& row : *rows) names.insert(folded(row[0].value_or("")));
  return names;
}

// Creates the table from the batch, or adds the batch's new fields as nullable columns.
Status SynapseSink::prepare_table(const Batch& batch) {
  if (columns_.empty()) {
    auto names = columns();
    if (!names) return std::unexpected(names.error());
    columns_ = std::move(*names);
  }
  if (columns_.empty()) {
    std::string definition;
    for (const Field& field : batch.schema.fields) {
      definition +=
          fmt::format("{}{} {} NULL", definition.empty() ? "" : ", ", ts_name(field.name), ts_type(field.type));
    }
    SKIPPR_TRY(conn_->execute(fmt::format("IF OBJECT_ID({}, N'U') IS NULL CREATE TABLE {} ({})", ts_literal(target()),
                                          target(), definition)));
  } else {
    for (const Field& field : batch.schema.fields) {
      if (columns_.contains(folded(field.name))) continue;
      SKIPPR_TRY(conn_->execute(
          fmt::format("ALTER TABLE {} ADD {} {} NULL", target(), ts_name(field.name), ts_type(field.type))));
    }
  }
  for (const Field& field : batch.schema.fields) columns_.insert(folded(field.name));
  return ok();
}

Result<uint64_t> SynapseSink::land_batch(const BatchToLand& item) {
  const BatchId& id = item.id;
  SKIPPR_TRY(use_table_of(item.batch));
  auto failed = [&](const Error& e) {
    return fail(e.kind, fmt::format("writing batch {} to {}: {}", id.str(), where(), e.message));
  };
  if (item.batch.rows > 0) {
    std::string columns;
    for (const Field& field : item.batch.schema.fields) columns += (columns.empty() ? "" : ", ") + ts_name(field.name);
    const std::string copy = fmt::format(
        "COPY INTO {} ({}) FROM {} WITH (FILE_TYPE = 'CSV', CREDENTIAL = ({}), COMPRESSION = 'GZIP', FIRSTROW = 2, "
        "FIELDQUOTE = '\"', FIELDTERMINATOR = ',', ENCODING = 'UTF8')",
        target(), columns, ts_plain_literal(staged_url(item)), credential());
    if (auto st = conn_->execute(copy); !st) return failed(st.error());
  }
  failpoint::hit(failpoint::kSinkInTransaction);
  const std::string ledger_row = fmt::format(
      "INSERT INTO {} (target_table, batch_id, pipeline, lineage, epoch, seq, [rows], position_after, landed_at) "
      "VALUES "
      "({}, {}, {}, {}, {}, {}, {}, {}, SYSUTCDATETIME())",
      ledger_table(), ts_literal(target()), ts_literal(id.str()), ts_literal(id.pipeline),
      id.lineage.empty() ? "NULL" : ts_literal(id.lineage), id.epoch, id.seq, item.batch.rows,
      item.position_after.empty() ? "NULL" : ts_literal(item.position_after.token));
  if (auto st = conn_->execute(ledger_row); !st) return failed(st.error());
  return uint64_t{0};
}

Result<std::vector<BatchLanded>> SynapseSink::write_in_transaction(std::span<const BatchToLand> group) {
  // Before COMMIT a failure is definite (XACT_ABORT rolled the transaction back), except a lost link: an unknown
  // outcome, which the engine retries with the same BatchIds, and the ledger decides.
  auto failed = [&](const Error& e) {
    return fail(conn_->broken() ? ErrorKind::kUnknownOutcome : e.kind, redact(e.message, config_.secrets));
  };
  // A dedicated SQL pool runs no DDL inside a user transaction: the table is made or widened first, autocommitted
  // (creating a table or adding a nullable column twice is harmless, and a batch already landed needs no more).
  for (const auto& item : group) {
    if (item.batch.rows == 0) continue;
    SKIPPR_TRY(use_table_of(item.batch));
    if (auto st = prepare_table(item.batch); !st) {
      return failed(
          {st.error().kind, fmt::format("preparing {} for batch {}: {}", where(), item.id.str(), st.error().message)});
    }
  }
  if (auto st = conn_->execute("BEGIN TRANSACTION"); !st) return failed(st.error());
  auto rollback = [&] {
    if (!conn_->broken()) (void)conn_->execute("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION");
  };
  auto has = [&](const BatchToLand& item) -> Result<bool> {
    SKIPPR_TRY(use_table_of(item.batch));
    auto rows = conn_->query(ledger_has_sql(ledger(), target(), item.id));
    if (!rows) return std::unexpected(rows.error());
    return !rows->empty();
  };
  auto landed = land_new_batches(group, has, [&](const BatchToLand& item) { return land_batch(item); });
  if (!landed || all_already_applied(*landed)) {
    rollback();
    if (!landed) return failed(landed.error());
    return landed;
  }
  if (auto st = conn_->execute("COMMIT TRANSACTION"); !st) {
    if (conn_->broken()) {
      return fail(ErrorKind::kUnknownOutcome, fmt::format("committing {} to {}: {}", group_ids(group), where(),
                                                          redact(st.error().message, config_.secrets)));
    }
    rollback();
    return failed(st.error());
  }
  return landed;
}

Result<std::vector<BatchLanded>> SynapseSink::write_group(std::span<const BatchToLand> group) {
  for (const auto& item : group) SKIPPR_TRY(item.batch.check_shape());
  SKIPPR_TRY(open());
  auto landed = land_through_stage(
      group, staging(), [this](const BatchToLand& item) { return staged_name(item); },
      [](const BatchToLand& item) { return staged_csv_gzip(item.batch); }, [&] { return write_in_transaction(group); });
  if (!landed && conn_ && conn_->broken()) conn_.reset();  // the next attempt reconnects
  return landed;
}

}  // namespace

ConnectorSpec synapse_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Synapse";
  spec.is_source = false;
  spec.summary = "an Azure Synapse dedicated SQL pool table, loaded by COPY INTO from Blob Storage (staged per batch)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;        // all of a batch's tables in one transaction
  spec.max_identifier_bytes = 128;  // SQL Server (sysname) names hold 128 characters; counted in bytes to be safe
  spec.params = {
      {"server", ParamType::kString, true, nullptr, "the SQL endpoint, e.g. myworkspace.sql.azuresynapse.net"},
      {"port", ParamType::kInt, false, 1433, "the SQL endpoint's TCP port"},
      {"database", ParamType::kString, true, nullptr, "the dedicated SQL pool"},
      {"user", ParamType::kString, true, nullptr, "a SQL login"},
      {"password", ParamType::kString, true, nullptr, "secret: the login's password; use ${VAR}"},
      {"schema", ParamType::kString, false, "dbo", "the target's schema; created when absent"},
      {"table", ParamType::kString, false, nullptr,
       "the target table; created from the first batch's schema. May hold {stream} (default for a source of several "
       "streams: {stream}, each stream in a table of its own)"},
      {"storage_account", ParamType::kString, true, nullptr, "the storage account batches are staged in"},
      {"container", ParamType::kString, true, nullptr, "the container batches are staged in"},
      {"storage_prefix", ParamType::kString, false, "skippr-staging/", "the staging folder's prefix in container"},
      {"storage_endpoint", ParamType::kString, false, nullptr,
       "the account's blob endpoint (https://<storage_account>.blob.core.windows.net when absent)"},
      {"encrypt", ParamType::kBool, false, true,
       "TLS to the SQL endpoint (Azure requires it; off only for a local test "
       "server)"},
      {"statement_timeout_seconds", ParamType::kInt, false, 900,
       "a statement unanswered this long fails as an unknown outcome (the ledger decides its retry)"},
      {"driver", ParamType::kString, false, kFreeTdsDriver,
       "the ODBC driver: FreeTDS's libtdsodbc.so (Debian's tdsodbc package) by default"},
  };
  for (ParamSpec p : azure_credential_params()) spec.params.push_back(std::move(p));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string where = fmt::format("sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: landing {} is not in this build of the Synapse sink (append only); use landing: "
                              "append",
                              where, to_string(ctx.landing)));
    }
    auto text = [&](const char* name, std::string fallback = "") { return ctx.params.value(name, fallback); };
    SynapseConfig config;
    config.schema = text("schema", "dbo");
    auto tables = StreamTables::make(where, "table", StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    config.tables = std::move(*tables);
    config.table = config.tables.pattern();
    config.container = text("container");
    config.statement_timeout_seconds = ctx.params.value("statement_timeout_seconds", 900);
    if (config.table.empty() || config.schema.empty() || config.container.empty() || text("server").empty()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: Synapse needs server, table, container (and a non-empty schema)", where));
    }
    const std::string password = text("password");
    for (const char* name : {"driver", "server", "database", "user", "password"}) {
      if (!odbc_quotable(text(name))) {
        return fail(ErrorKind::kConfig, fmt::format("{}: {} holds a '}}', which FreeTDS's ODBC driver cannot read in a "
                                                    "connection string; choose one without it",
                                                    where, name));
      }
    }
    config.connection_string = fmt::format(
        "DRIVER={};SERVER={};PORT={};DATABASE={};UID={};PWD={};TDS_Version=7.4;ClientCharset=UTF-8;Encryption={}",
        odbc_braced(text("driver", kFreeTdsDriver)), odbc_braced(text("server")), ctx.params.value("port", 1433),
        odbc_braced(text("database")), odbc_braced(text("user")), odbc_braced(password),
        ctx.params.value("encrypt", true) ? "require" : "off");
    AzureOptions storage = read_azure_options(ctx.params);
    storage.account = text("storage_account");
    storage.endpoint = text("storage_endpoint");
    auto account = resolve_azure_account(storage, where);
    if (!account) return std::unexpected(account.error());
    config.storage = std::move(*account);
    config.secrets = config.storage.secrets;
    if (!password.empty()) config.secrets.push_back(password);
    if (!config.storage.key.empty()) config.secrets.push_back(azure_base64(config.storage.key));
    std::string prefix = text("storage_prefix", "skippr-staging/");
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    config.prefix = fmt::format("{}{}.{}/", prefix, folded(config.schema), tables_as_one_name(folded(config.table)));
    return std::make_unique<SynapseSink>(ctx, std::move(config));
  };
  return spec;
}

}  // namespace skippr
