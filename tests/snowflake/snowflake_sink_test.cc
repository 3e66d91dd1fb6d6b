// The Snowflake sink against tests/support/snowflake_emulator (the SQL API v2 on a real DuckDB): every row once with
// one ledger row per batch, under SIGKILLs and dropped answers, every resend under its first requestId; login and
// setup mistakes stop with exit 2 and no secret.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include <signal.h>

#include "clients/aws/s3_client.h"
#include "clients/snowflake/snowflake_client.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/emulator_common.h"
#include "support/fault_proxy.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"
#include "support/sink_suite.h"
#include "support/snowflake_emulator.h"
#include "support/stream_files.h"
#include "support/test_keys.h"

namespace skippr::test {
namespace {

// count, distinct ids and a content hash of a table in the emulator (every column as text).
std::string digest(const std::string& table) {
  const auto rows = SharedSnowflake().query(fmt::format(
      "SELECT count(*), count(DISTINCT trip_id), sum(hash(trip_id::VARCHAR, rider_id::VARCHAR, bike_id, event_type, "
      "event_time::VARCHAR, station, duration_s::VARCHAR, firmware, metadata::VARCHAR))::VARCHAR FROM "
      "\"ANALYTICS\".\"PUBLIC\".\"{}\"",
      table));
  return fmt::format("{} {} {}", rows[0][0], rows[0][1], rows[0][2]);
}

// (ledger rows of `table`, distinct batch ids among them).
std::pair<std::string, std::string> ledger_of(const std::string& table) {
  const auto rows = SharedSnowflake().query(fmt::format(
      "SELECT count(*), count(DISTINCT batch_id) FROM \"ANALYTICS\".\"PUBLIC\".\"_skippr_batches\" WHERE target_table "
      "= '\"ANALYTICS\".\"PUBLIC\".\"{}\"'",
      table));
  return {rows[0][0], rows[0][1]};
}

// Every transaction the emulator saw for `table`, by the batch it lands: each batch under one requestId only, and
// every second send of it marked retry=true.
void expect_one_request_id_per_batch(const std::string& table) {
  std::map<std::string, std::set<std::string>> ids_by_batch;
  std::map<std::string, int> first_sends;
  const std::regex batch(R"(batch_id = '([^']+)')");
  for (const auto& seen : SharedSnowflake().requests()) {
    if (seen.statement.find("BEGIN TRANSACTION") == std::string::npos ||
        seen.statement.find(fmt::format("\"PUBLIC\".\"{}\" (", table)) == std::string::npos) {
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_search(seen.statement, m, batch));
    ids_by_batch[m[1]].insert(seen.request_id);
    if (!seen.retry) ++first_sends[seen.request_id];
  }
  EXPECT_FALSE(ids_by_batch.empty());
  for (const auto& [id, request_ids] : ids_by_batch) {
    EXPECT_EQ(request_ids.size(), 1u) << id << " was sent under several requestIds";
  }
  for (const auto& [request_id, n] : first_sends) EXPECT_EQ(n, 1) << request_id << " was sent twice without retry";
}

// The external stage the staged tests use: a bucket on moto, which the emulator's stage ANALYTICS.PUBLIC.SKIPPR_STAGE
// reads (as a Snowflake stage with URL = 's3://<bucket>/stage/' would).
const std::string& stage_bucket() {
  static const std::string bucket = [] {
    std::string b = SharedMoto().create_bucket("sfstage");
    AwsService service{"us-east-1", SharedMoto().endpoint(), true, {"testing", "testing", "", "test"}};
    auto s3 = std::make_shared<S3Client>(service);
    SharedSnowflake().add_stage("ANALYTICS.PUBLIC.SKIPPR_STAGE", [b, s3](const std::string& path) {
      auto got = s3->get_object_if_exists(b, "stage/" + path);
      if (!got) throw std::runtime_error(got.error().message);
      return *got;
    });
    return b;
  }();
  return bucket;
}

// The sink's parameters for that stage; batches from `threshold` bytes up go through it.
std::string staged(uint64_t threshold) {
  return fmt::format(", stage: ANALYTICS.PUBLIC.SKIPPR_STAGE, stage_url: \"s3://{}/stage\", stage_threshold_bytes: {}",
                     stage_bucket(), threshold);
}

std::map<std::string, std::string> with_moto(std::map<std::string, std::string> env) {
  for (const auto& [k, v] : SharedMoto().env()) env[k] = v;
  return env;
}

// A fault on the landing transactions (requests whose text holds BEGIN TRANSACTION).
FaultRule on_transactions(const std::string& action, int skip, int times) {
  return {.method = "POST",
          .path_regex = "^/api/v2/statements",
          .body_regex = "BEGIN TRANSACTION",
          .action = action,
          .skip = skip,
          .times = times};
}

// Requests (`transactions` only, or all) answered `status` with `code` instead of reaching Snowflake.
FaultRule answered(int status, const std::string& code, int skip, int times, bool transactions) {
  return {.method = "POST",
          .path_regex = "^/api/v2/statements",
          .body_regex = transactions ? "BEGIN TRANSACTION" : "",
          .action = "status",
          .status = status,
          .code = code,
          .skip = skip,
          .times = times};
}

// A client of the emulator as the sink configures one, for the API's own tests.
SnowflakeConfig emulator_client_config() {
  SnowflakeConfig config;
  config.account = "testorg-skippr";
  config.user = "loader";
  config.private_key_pem = read_text(snowflake_test_private_key());
  config.key_source = "the test key";
  config.warehouse = "LOAD_WH";
  config.database = "ANALYTICS";
  config.schema = "PUBLIC";
  config.endpoint = SharedSnowflake().endpoint();
  config.where = "test";
  return config;
}

// The statement that writes a batch's ledger row: slowed, it keeps a landing transaction executing (with the fence
// row locked) after its client has given up on it or died.
constexpr const char* kLedgerInsert = "INSERT INTO \"ANALYTICS\".\"PUBLIC\".\"_skippr_batches\" (target_table";

// Statements slowed for as long as it lives; the emulator answers within `answer_within`.
struct SlowLedgerInserts {
  SlowLedgerInserts(std::chrono::milliseconds delay, std::chrono::milliseconds answer_within, int times = -1) {
    SharedSnowflake().slow_statements(kLedgerInsert, delay, times);
    SharedSnowflake().answer_within(answer_within);
  }
  ~SlowLedgerInserts() {
    SharedSnowflake().slow_statements("", std::chrono::milliseconds(0));
    SharedSnowflake().answer_within(std::chrono::seconds(45));
  }
};

// Landing transactions of `table` the emulator has received.
size_t transactions_sent(const std::string& table) {
  size_t n = 0;
  for (const auto& seen : SharedSnowflake().requests()) {
    n += seen.statement.find("BEGIN TRANSACTION") != std::string::npos &&
         seen.statement.find(fmt::format("\"PUBLIC\".\"{}\" (", table)) != std::string::npos;
  }
  return n;
}

// How many transactions of `table` above 1 MB of text ran again while (or after) their first execution ran: the
// resends Snowflake cannot match to their requestId.
int large_transactions_run_again(const std::string& table) {
  std::map<std::string, int> executions;
  for (const auto& seen : SharedSnowflake().requests()) {
    if (seen.executed && seen.statement.size() > (1u << 20) &&
        seen.statement.find(fmt::format("\"PUBLIC\".\"{}\" (", table)) != std::string::npos) {
      ++executions[seen.request_id];
    }
  }
  int again = 0;
  for (const auto& [id, n] : executions) again += n - 1;
  return again;
}

TEST(SnowflakeSink, LandsEveryRowWithOneLedgerRowPerBatch) {
  PipelineFixture f(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "trips"), 20000, 5));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  PipelineFixture duck(sample_to_duckdb_config(20000, 5));
  ASSERT_EQ(duck.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  // Every value as the text both engines give it (the DuckDB sink keeps timestamps WITH TIME ZONE).
  constexpr const char* kDigest =
      "SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || sum(hash(concat_ws('|', trip_id, "
      "epoch_us(event_time), station, duration_s)))::VARCHAR FROM {}";
  const std::string want = duckdb_value(duck.path("out.duckdb"), fmt::format(kDigest, "trips"));
  const auto got = SharedSnowflake().query(fmt::format(kDigest, "\"ANALYTICS\".\"PUBLIC\".\"trips\""));
  EXPECT_EQ(got[0][0], want);
  const auto [ledger_rows, ledger_ids] = ledger_of("trips");
  EXPECT_EQ(ledger_rows, ledger_ids);
  EXPECT_GT(std::stoi(ledger_rows), 1);
  // Types as Snowflake's catalog names them.
  const auto types = SharedSnowflake().query(
      "SELECT column_name || ':' || data_type FROM sf_information_schema_columns WHERE table_name = 'trips' AND "
      "column_name IN ('trip_id', 'event_time', 'metadata', 'duration_s') ORDER BY column_name");
  ASSERT_EQ(types.size(), 4u);
  EXPECT_EQ(types[0][0], "duration_s:FLOAT");
  EXPECT_EQ(types[1][0], "event_time:TIMESTAMP_NTZ");
  EXPECT_EQ(types[2][0], "metadata:VARIANT");
  EXPECT_EQ(types[3][0], "trip_id:NUMBER");
  // A second run finds everything landed and writes nothing.
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ledger_of("trips").first, ledger_rows);
}

// Answers lost after Snowflake acted, and statements answered 202 (polled by handle): nothing lands twice, and every
// resend carries the batch's first requestId with retry=true.
TEST(SnowflakeSink, DroppedAnswersAndAsyncStatementsLandOnceUnderOneRequestId) {
  FaultProxy proxy(SharedSnowflake().endpoint());
  proxy.add(on_transactions("drop_after_forward", 1, 4));
  proxy.add(on_transactions("drop_before_forward", 2, 3));
  // Throttled (429) reads and DDL: the client backs off and sends them again.
  const int throttled = proxy.add(answered(429, "TooManyRequests", 2, 3, /*transactions=*/false));
  PipelineFixture unkilled(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "calm"), 30000, 8));
  ASSERT_EQ(
      unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}}).exit_code,
      0);
  PipelineFixture f(
      sample_to_sink_config(snowflake_sink(proxy.endpoint(), "dropped", ", timeout_seconds: 5"), 30000, 8));
  SharedSnowflake().answer_async(true);
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                       {{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"SINK_RETRY_SECONDS", "120"}});
  SharedSnowflake().answer_async(false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(digest("dropped"), digest("calm"));
  const auto [rows, ids] = ledger_of("dropped");
  EXPECT_EQ(rows, ids);
  EXPECT_EQ(rows, ledger_of("calm").first);
  expect_one_request_id_per_batch("dropped");
  EXPECT_EQ(proxy.hits(throttled), 3);
  int resent = 0;
  for (const auto& seen : SharedSnowflake().requests()) resent += seen.retry ? 1 : 0;
  EXPECT_GE(resent, 1) << "no transaction was resent after a lost request";
}

// A transaction that fails with 422 for a reason of the moment — too many waiters on a lock (000625, SQLSTATE 57014),
// a serialization failure (SQLSTATE 40001) — committed nothing and is sent again, not taken for a setup mistake
// (exit 2). A 422 compilation error stays exit 2 (LoginAndSetupMistakes...).
TEST(SnowflakeSink, ATransactionFailingForAReasonOfTheMomentIsSentAgain) {
  FaultProxy proxy(SharedSnowflake().endpoint());
  const int locked = proxy.add(
      {.method = "POST",
       .path_regex = "^/api/v2/statements",
       .body_regex = "BEGIN TRANSACTION",
       .action = "status",
       .status = 422,
       .body = R"({"code":"000625","sqlState":"57014","message":"Statement '01b0' has locked table 'TRIPS' in )"
               R"(transaction 1700 and this lock has not yet been released.","statementHandle":"01b0"})",
       .skip = 1,
       .times = 2});
  const int serialization = proxy.add(
      {.method = "POST",
       .path_regex = "^/api/v2/statements",
       .body_regex = "BEGIN TRANSACTION",
       .action = "status",
       .status = 422,
       .body = R"({"code":"000603","sqlState":"40001","message":"Transaction was aborted.","statementHandle":"01b1"})",
       .skip = 2,
       .times = 1});
  PipelineFixture calm(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "calm_locks"), 20000, 14));
  ASSERT_EQ(
      calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}}).exit_code, 0);
  PipelineFixture f(sample_to_sink_config(snowflake_sink(proxy.endpoint(), "locks"), 20000, 14));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                       {{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"SINK_RETRY_SECONDS", "120"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(proxy.hits(locked), 2);
  EXPECT_EQ(proxy.hits(serialization), 1);
  EXPECT_EQ(digest("locks"), digest("calm_locks"));
  const auto [rows, ids] = ledger_of("locks");
  EXPECT_EQ(rows, ids);
  EXPECT_EQ(rows, ledger_of("calm_locks").first);
}

TEST(SnowflakeSink, LoginAndSetupMistakesStopWithExitTwoAndNoSecret) {
  TempDir other;
  make_rsa_key(other.path(), "stranger");
  const std::string endpoint = SharedSnowflake().endpoint();
  const std::string key_text = read_text(snowflake_test_private_key());
  const std::string key_line = key_text.substr(key_text.find('\n') + 1, 40);
  struct Case {
    std::string sink, expect;
  };
  const std::vector<Case> cases = {
      {fmt::format("Snowflake: {{ account: testorg-skippr, user: loader, private_key_file: \"{}\", warehouse: "
                   "LOAD_WH, database: ANALYTICS, table: t, endpoint: \"{}\" }}",
                   (other / "stranger.pem").string(), endpoint),
       "refused the key-pair login of user loader"},
      {snowflake_sink(endpoint, "t").replace(snowflake_sink(endpoint, "t").find("LOAD_WH"), 7, "NO_WH"),
       "No active warehouse"},
      {snowflake_sink(endpoint, "t").replace(snowflake_sink(endpoint, "t").find("ANALYTICS"), 9, "NOPE"),
       "database does not exist"},
      {fmt::format("Snowflake: {{ account: a, user: u, private_key_file: \"{}\", database: D, table: t }}",
                   (other / "stranger.pub").string()),
       "is not a PEM RSA key"},
  };
  for (const auto& c : cases) {
    PipelineFixture f(sample_to_sink_config(c.sink, 10));
    auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SINK_RETRY_SECONDS", "2"}});
    EXPECT_EQ(run.exit_code, 2) << c.sink << "\n" << run.err;
    EXPECT_NE(run.err.find(c.expect), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find(key_line), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find("Bearer"), std::string::npos) << run.err;
    EXPECT_TRUE(files_containing(f.path("data"), key_line).empty());
  }
}

// The request's shapes as the API reference gives them: a v4-form UUID requestId derived from the batch, the JWT's
// account spelled as Snowflake wants it; Snowflake's literals and statement splitting as the emulator reads them.
// The API's idempotency hook as the client uses it: a transaction resent under its requestId with retry=true is
// answered from its first execution and not run again.
TEST(SnowflakeApi, ARetryUnderTheSameRequestIdIsNotRunAgain) {
  const SnowflakeConfig config = emulator_client_config();
  auto client = SnowflakeClient::make(config);
  ASSERT_TRUE(client) << client.error().message;
  ASSERT_TRUE(client->query("CREATE TABLE IF NOT EXISTS \"retried\" (n NUMBER(38,0))"));
  const std::string sql = "BEGIN TRANSACTION; INSERT INTO \"retried\" VALUES (1); COMMIT";
  const std::string id = snowflake_request_id("retried");
  ASSERT_TRUE(client->execute(sql, 3, id, false));
  auto again = client->execute(sql, 3, id, true);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(SharedSnowflake().requests().back().executed);
  auto count = client->query("SELECT count(*) FROM \"retried\"");
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(count->rows.at(0).at(0).value_or(""), "1");
}

// The emulator as strict as Snowflake's documentation: a request above 1 MB resent under its requestId runs again,
// beside the first execution if that still runs. Two executions of a conditional INSERT both pass its NOT EXISTS
// (inserts do not wait for each other); with an UPDATE of a fence table first, the second waits for the first's
// commit and then sees its row (READ COMMITTED).
TEST(SnowflakeApi, ALargeRequestResentRunsAgainAndOnlyATableLockSerialisesTheTwo) {
  const SnowflakeConfig config = emulator_client_config();
  auto client = SnowflakeClient::make(config);
  ASSERT_TRUE(client) << client.error().message;
  const std::string padding = fmt::format("SELECT '{}'", std::string(700000, 'p'));
  for (const bool locked : {false, true}) {
    SCOPED_TRACE(locked);
    const std::string table = locked ? "pair_locked" : "pair_unlocked";
    ASSERT_TRUE(client->query(fmt::format("CREATE TABLE IF NOT EXISTS \"{}\" (n NUMBER(38,0))", table)));
    ASSERT_TRUE(client->query("CREATE TABLE IF NOT EXISTS \"pair_fence\" (n NUMBER(38,0))"));
    ASSERT_TRUE(client->query("INSERT INTO \"pair_fence\" VALUES (0)"));
    const std::string sql = fmt::format(
        "BEGIN TRANSACTION; {}{}; {}; INSERT INTO \"{}\" SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM \"{}\"); COMMIT",
        locked ? "UPDATE \"pair_fence\" SET n = n + 1; " : "", padding, padding, table, table);
    const std::string id = snowflake_request_id(table);
    SharedSnowflake().slow_statements(fmt::format("INSERT INTO \"{}\"", table), std::chrono::milliseconds(1500));
    const int statements = locked ? 6 : 5;
    std::thread first([&] { EXPECT_TRUE(client->execute(sql, statements, id, false)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto second_client = SnowflakeClient::make(config);
    ASSERT_TRUE(second_client);
    auto again = second_client->execute(sql, statements, id, true);
    first.join();
    SharedSnowflake().slow_statements("", std::chrono::milliseconds(0));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(SharedSnowflake().requests().back().executed) << "a request above 1 MB was matched to its requestId";
    const auto rows =
        SharedSnowflake().query(fmt::format("SELECT count(*) FROM \"ANALYTICS\".\"PUBLIC\".\"{}\"", table));
    EXPECT_EQ(rows[0][0], locked ? "1" : "2");
  }
}

// The request the sink sends, field by field as the SQL API reference's example of POST /api/v2/statements has them
// (statement, timeout, database, schema, warehouse, parameters.MULTI_STATEMENT_COUNT; the Authorization bearer JWT
// with X-Snowflake-Authorization-Token-Type: KEYPAIR_JWT, JSON in and out), and the key-pair JWT's claims as the
// key-pair authentication guide defines them (iss = ACCOUNT.USER.SHA256:fingerprint, sub = ACCOUNT.USER, iat, exp
// within an hour).
TEST(SnowflakeApi, TheTransactionRequestHasTheDocumentedShape) {
  PipelineFixture f(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "shaped"), 100, 2));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  std::optional<SnowflakeRequestSeen> transaction;
  for (const auto& seen : SharedSnowflake().requests()) {
    if (seen.statement.starts_with("BEGIN TRANSACTION") && seen.statement.find("\"shaped\"") != std::string::npos) {
      transaction = seen;
    }
  }
  ASSERT_TRUE(transaction);
  const auto body = nlohmann::json::parse(transaction->body);
  std::set<std::string> keys;
  for (const auto& [key, value] : body.items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"statement", "timeout", "database", "schema", "warehouse", "parameters"}));
  EXPECT_EQ(body["database"], "ANALYTICS");
  EXPECT_EQ(body["schema"], "PUBLIC");
  EXPECT_EQ(body["warehouse"], "LOAD_WH");
  EXPECT_TRUE(body["timeout"].is_number_integer());
  EXPECT_EQ(body["parameters"]["MULTI_STATEMENT_COUNT"], std::to_string(split_statements(body["statement"]).size()));
  EXPECT_EQ(transaction->headers.at("Authorization"), "Bearer ");
  EXPECT_EQ(transaction->headers.at("X-Snowflake-Authorization-Token-Type"), "KEYPAIR_JWT");
  EXPECT_EQ(transaction->headers.at("Content-Type"), "application/json");
  EXPECT_EQ(transaction->headers.at("Accept"), "application/json");
  EXPECT_TRUE(std::regex_match(transaction->request_id,
                               std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
}

TEST(SnowflakeApi, RequestIdsAccountNamesAndTheEmulatorsDialect) {
  const std::string id = snowflake_request_id("target|pipeline/lineage/1/7");
  EXPECT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << id;
  EXPECT_EQ(id, snowflake_request_id("target|pipeline/lineage/1/7"));
  EXPECT_NE(id, snowflake_request_id("target|pipeline/lineage/1/8"));
  EXPECT_EQ(snowflake_jwt_account("xy12345.us-east-1"), "XY12345");
  EXPECT_EQ(snowflake_jwt_account("myorg-account1"), "MYORG-ACCOUNT1");
  EXPECT_EQ(sf_quote_literal("it's a \\ path"), "'it\\'s a \\\\ path'");
  EXPECT_EQ(split_statements("BEGIN TRANSACTION; INSERT INTO t VALUES ('a;b');\nCOMMIT;").size(), 3u);
  // Each statement keeps its literals as written: the dialect reads the escapes afterwards.
  EXPECT_EQ(split_statements("SELECT 'a\\\\b;c'; SELECT 'it\\'s'")[0], "SELECT 'a\\\\b;c'");
  EXPECT_EQ(to_duckdb_sql(split_statements("SELECT 'a\\\\b'")[0]), "SELECT 'a\\b'");
  EXPECT_EQ(to_duckdb_sql("CREATE TABLE t (a NUMBER(38,0), b VARIANT, c TIMESTAMP_NTZ(6), d FLOAT, e VARCHAR) -- 'x'"),
            "CREATE TABLE t (a DECIMAL(38,0), b JSON, c TIMESTAMP(6), d DOUBLE, e VARCHAR) -- 'x'");
  EXPECT_EQ(to_duckdb_sql("SELECT 'it\\'s', 'a\\\\b', 'NUMBER'"), "SELECT 'it''s', 'a\\b', 'NUMBER'");
}

// Every batch through the external stage (threshold 0): the same table as the literal path gives for the same rows,
// under kills inside the landing and lost DATA_DIRs.
TEST(SnowflakeSink, StagedBatchesLandOnceUnderKillsAndLostDataDirs) {
  constexpr uint64_t kRows = 60000;
  auto env = with_moto({{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"WAL_BYTES_PER_FILE", "1000000"}});
  PipelineFixture literal(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "literal"), kRows, 12));
  ASSERT_EQ(literal.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300).exit_code, 0);
  PipelineFixture f(
      sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "staged", staged(0)), kRows, 12));
  ASSERT_EQ(kill_inside_landing(f, "bikehire", env, 6), "");
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.05";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.8";
  const ChaosRuns runs =
      sync_until_done_under_chaos(f, "bikehire", env, 5100, {.lose_data_dir_every = 4, .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 15) << runs.summary();
  const std::string want = digest("literal");
  EXPECT_TRUE(want.starts_with(fmt::format("{} {} ", kRows, kRows))) << want;
  EXPECT_EQ(digest("staged"), want);
  const auto [rows, ids] = ledger_of("staged");
  EXPECT_EQ(rows, ids) << "a batch is in the ledger twice";
  // Each staged file is loaded into a temporary table of its request (again when the request is), and from there on
  // the ledger's and the fence's conditions: the rows above landed once whatever the loads.
  std::set<std::string> files;
  for (const auto& [file, table] : SharedSnowflake().loads()) {
    if (file.find("/staged/") != std::string::npos) files.insert(file);
  }
  EXPECT_GE(files.size(), 10u) << "the batches did not go through the stage";
  // No requestId check here: a replay after a kill may group batches differently, which is another request by design;
  // what keeps a batch once is the ledger under the fence, checked above.
}

// merge_by_key through the stage: the staging table is filled by COPY INTO, the MERGE is the same.
TEST(SnowflakeSink, StagedMergeByKeyUpsertsWhatARereadBrings) {
  PipelineFixture f(
      sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "staged_merge", staged(0)), 6000, 6) +
      "    landing: merge_by_key\n    primary_key: trip_id\n");
  const auto env = with_moto({{"BUFFER_THRESHOLD_BYTES", "128KiB"}});
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);
  const std::string first = digest("staged_merge");
  EXPECT_TRUE(first.starts_with("6000 6000 ")) << first;
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, env).exit_code, 0);
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(digest("staged_merge"), first);
  int staged_loads = 0;
  for (const auto& [file, table] : SharedSnowflake().loads())
    staged_loads += file.find("/staged_merge/") != std::string::npos;
  EXPECT_GE(staged_loads, 2);
}

// A value near 1.5 MB cannot travel in a statement: without a stage the batch waits in the WAL (exit 2: waiting
// cannot fix it; nothing lost) and the message says what to set; with a stage (default threshold) it is staged and the
// value lands whole, and so does the waiting batch once the same pipeline is given the stage.
TEST(SnowflakeSink, ARowTooLargeForAStatementTravelsThroughTheStage) {
  TempDir dir;
  const std::string big(1500000, 'x');
  write_text(dir / "big.jsonl", fmt::format("{{\"id\": 1, \"note\": \"small\"}}\n{{\"id\": 2, \"note\": \"{}\"}}\n"
                                            "{{\"id\": 3, \"note\": null}}\n",
                                            big));
  auto config = [&](const std::string& table, const std::string& extra) {
    return jsonl_files_to_sink_config((dir / "*.jsonl").string(),
                                      snowflake_sink(SharedSnowflake().endpoint(), table, extra));
  };
  PipelineFixture without(config("too_big", ""));
  auto refused =
      without.skipprd({"sync", "--pipeline", "bikehire", "--once"}, with_moto({{"SINK_RETRY_SECONDS", "2"}}));
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("wait in the WAL"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("too large for a statement"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("set `stage` and `stage_url`"), std::string::npos) << refused.err;
  PipelineFixture with(config("big_staged", staged(1 << 20)));
  auto run = with.skipprd({"sync", "--pipeline", "bikehire", "--once"}, with_moto({}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = SharedSnowflake().query(
      "SELECT count(*), max(length(note))::VARCHAR FROM \"ANALYTICS\".\"PUBLIC\".\"big_staged\"");
  EXPECT_EQ(rows[0], (std::vector<std::string>{"3", "1500000"}));
  write_text(without.path("skippr.yml"), config("too_big", staged(1 << 20)));
  auto delivered = without.skipprd({"sync", "--pipeline", "bikehire", "--once"}, with_moto({}));
  ASSERT_EQ(delivered.exit_code, 0) << delivered.err;
  EXPECT_EQ(SharedSnowflake().query("SELECT count(*) FROM \"ANALYTICS\".\"PUBLIC\".\"too_big\"")[0][0], "3");
}

// Batches that waited in the WAL (the warehouse was unreachable) land coalesced: several in one transaction under one
// requestId, killed inside a group's landing and after its commit, then finished: the table equals an unkilled
// run's, each batch in the ledger once.
TEST(SnowflakeSink, WaitingBatchesLandCoalescedInOneTransaction) {
  const std::map<std::string, std::string> env = {
      {"BUFFER_THRESHOLD_BYTES", "64KiB"}, {"LANDING_QUEUE_BYTES", "4MiB"}, {"SINK_RETRY_SECONDS", "1"}};
  PipelineFixture calm(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "ungrouped"), 20000, 13));
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);
  PipelineFixture f(sample_to_sink_config(snowflake_sink("http://127.0.0.1:1", "grouped"), 20000, 13));
  auto waiting = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(waiting.exit_code, 75) << waiting.err;
  write_text(f.path("skippr.yml"),
             sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "grouped"), 20000, 13));
  auto in_group = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, armed_at(env, "sink.in_group", 1));
  ASSERT_EQ(in_group.exit_code, 137) << in_group.err;
  auto after_commit =
      f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, armed_at(env, "sink.after_group_commit", 1));
  ASSERT_EQ(after_commit.exit_code, 137) << after_commit.err;
  auto done = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(digest("grouped"), digest("ungrouped"));
  const auto [rows, ids] = ledger_of("grouped");
  EXPECT_EQ(rows, ids);
  EXPECT_EQ(rows, ledger_of("ungrouped").first);
  size_t largest = 0;
  const std::regex ledger_row("INSERT INTO \"ANALYTICS\".\"PUBLIC\".\"_skippr_batches\"");
  for (const auto& seen : SharedSnowflake().requests()) {
    if (seen.statement.find("\"PUBLIC\".\"grouped\" (") == std::string::npos) continue;
    const auto n = static_cast<size_t>(std::distance(
        std::sregex_iterator(seen.statement.begin(), seen.statement.end(), ledger_row), std::sregex_iterator()));
    largest = std::max(largest, n);
  }
  EXPECT_GE(largest, 5u) << "no transaction carried several batches";
}

// Snowflake matches a resent requestId only for requests of at most 1 MB of text. Batches of ~10 MB and groups of
// smaller ones, whose statements outlast the client's timeout, answers dropped after Snowflake acted, 429 and 503: a
// resend executes again beside the first execution, and still every row lands once and every BatchId once (the
// fence's UPDATE makes the second execution wait for the first and then see its ledger row).
TEST(SnowflakeSink, ResentTransactionsAboveOneMegabyteOverlappingTheirFirstExecutionLandOnce) {
  for (const auto& [table, buffer] : {std::pair{"large", "12MiB"}, std::pair{"small_grouped", "96KiB"}}) {
    SCOPED_TRACE(table);
    const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", buffer},
                                                    {"BUFFER_THRESHOLD_SECONDS", "120"},
                                                    {"LANDING_QUEUE_BYTES", "64MiB"},
                                                    {"SINK_RETRY_SECONDS", "300"}};
    const std::string calm_table = std::string("calm_") + table;
    PipelineFixture calm(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), calm_table), 90000, 21));
    ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 900).exit_code, 0);

    FaultProxy proxy(SharedSnowflake().endpoint());
    proxy.add(on_transactions("drop_after_forward", 0, 2));
    const int unavailable = proxy.add(answered(503, "ServiceUnavailable", 2, 1, /*transactions=*/true));
    const int throttled = proxy.add(answered(429, "TooManyRequests", 4, 2, /*transactions=*/false));
    PipelineFixture f(
        sample_to_sink_config(snowflake_sink(proxy.endpoint(), table, ", timeout_seconds: 2"), 90000, 21));
    {
      // The first landings execute for 3 s; the client waits 2 s for an answer (then resends), the emulator would
      // answer within 10 s.
      SlowLedgerInserts slow(std::chrono::seconds(3), std::chrono::seconds(10), 4);
      auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 900);
      ASSERT_EQ(run.exit_code, 0) << run.err;
      while (SharedSnowflake().running_executions() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(digest(table), digest(calm_table));
    const auto [rows, ids] = ledger_of(table);
    EXPECT_EQ(rows, ids) << "a BatchId is in the ledger twice";
    EXPECT_EQ(rows, ledger_of(calm_table).first);
    EXPECT_EQ(proxy.hits(unavailable), 1);
    EXPECT_EQ(proxy.hits(throttled), 2);
    EXPECT_GE(large_transactions_run_again(table), 1) << "no transaction above 1 MB was executed twice";
    size_t largest = 0;
    for (const auto& seen : SharedSnowflake().requests()) {
      if (seen.statement.find(fmt::format("\"PUBLIC\".\"{}\" (", table)) != std::string::npos) {
        largest = std::max(largest, seen.statement.size());
      }
    }
    // One batch of ~10 MB of SQL, or groups of small batches up to the sink's 16 MB.
    EXPECT_GE(largest, size_t{8} << 20) << "no transaction as large as the test means";
  }
}

// A landing still executing in Snowflake when its process is SIGKILLed, then DATA_DIR lost: the next run (a new
// lineage) takes the fence over, which waits for that execution to commit, and only then reads the ledger's tip, so
// it resumes after the batch in flight instead of landing its rows again. Then a kill loop with slow landings and
// lost DATA_DIRs: the table equals an unkilled run's.
TEST(SnowflakeSink, AnExecutionOfAKilledRunCommitsBeforeASuccessorWithoutDataDirResumes) {
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"SINK_RETRY_SECONDS", "300"}};
  PipelineFixture calm(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "calm_fenced"), 30000, 22));
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);
  PipelineFixture f(sample_to_sink_config(snowflake_sink(SharedSnowflake().endpoint(), "fenced"), 30000, 22));
  auto spawned_env = env;
  spawned_env["DATA_DIR"] = f.path("data").string();
  spawned_env["SKIPPR_CONFIG_FILE"] = "";
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    {
      SlowLedgerInserts slow(std::chrono::seconds(4), std::chrono::seconds(45));
      const size_t landings_before = transactions_sent("fenced");
      const int pid =
          spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once"}, f.root(), spawned_env);
      // Killed while its landing executes: after the fence's UPDATE and the rows, inside the slowed ledger INSERT.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (transactions_sent("fenced") == landings_before && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      ASSERT_GT(transactions_sent("fenced"), landings_before) << "no landing was sent";
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      ::kill(pid, SIGKILL);
      wait_process(pid);
    }
    std::filesystem::remove_all(f.path("data"));
    ASSERT_GT(SharedSnowflake().running_executions(), 0) << "the landing finished before its process was killed";
  }
  auto done = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(digest("fenced"), digest("calm_fenced"));
  const auto [rows, ids] = ledger_of("fenced");
  EXPECT_EQ(rows, ids) << "a batch is in the ledger twice";
  const auto takeovers = SharedSnowflake().query(
      "SELECT takeovers::VARCHAR FROM \"ANALYTICS\".\"PUBLIC\".\"fenced__skippr_fence\" WHERE target_table = "
      "'\"ANALYTICS\".\"PUBLIC\".\"fenced\"'");
  ASSERT_EQ(takeovers.size(), 1u);
  EXPECT_GE(std::stoi(takeovers[0][0]), 3) << "the runs without DATA_DIR did not take the fence over";
}

// A copy of the pipeline whose target was taken over by a run with another DATA_DIR stops (exit 75 with its batches
// waiting, as a copy whose S3 WAL lease was taken) and says why, instead of landing into a table another lineage now
// feeds.
TEST(SnowflakeSink, ACopyWhoseTargetWasTakenOverStopsAndSaysWhy) {
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "256KiB"}};
  const std::string sink = snowflake_sink(SharedSnowflake().endpoint(), "taken");
  PipelineFixture first(sample_to_sink_config(sink, 3000, 23));
  ASSERT_EQ(first.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);
  PipelineFixture second(sample_to_sink_config(sink, 6000, 23));  // another DATA_DIR: a new lineage takes over
  ASSERT_EQ(second.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);
  write_text(first.path("skippr.yml"), sample_to_sink_config(sink, 9000, 23));
  auto stopped = first.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  EXPECT_EQ(stopped.exit_code, 75) << stopped.err;
  EXPECT_NE(stopped.err.find("was taken over here by a run that started without this one's DATA_DIR"),
            std::string::npos)
      << stopped.err;
  EXPECT_TRUE(digest("taken").starts_with("6000 6000 ")) << digest("taken");
}

// How many of the `tables` each transaction the emulator executed wrote to (their INSERT or MERGE into "PUBLIC"."t"),
// and under which requestIds each batch (named by its ledger condition) was sent: one, whatever its streams.
struct StreamTransactions {
  std::vector<int> tables_per_transaction;
  std::map<std::string, std::set<std::string>> request_ids_by_batch;
};
StreamTransactions stream_transactions(const std::vector<std::string>& tables) {
  StreamTransactions out;
  const std::regex batch(R"(batch_id = '([^']+)')");
  for (const auto& seen : SharedSnowflake().requests()) {
    if (seen.statement.find("BEGIN TRANSACTION") == std::string::npos) continue;
    int n = 0;
    for (const auto& t : tables) {
      n += seen.statement.find(fmt::format("INTO \"ANALYTICS\".\"PUBLIC\".\"{}\"", t)) != std::string::npos ? 1 : 0;
    }
    if (n == 0) continue;
    if (seen.executed) out.tables_per_transaction.push_back(n);
    for (auto it = std::sregex_iterator(seen.statement.begin(), seen.statement.end(), batch);
         it != std::sregex_iterator(); ++it) {
      out.request_ids_by_batch[(*it)[1]].insert(seen.request_id);
    }
  }
  return out;
}

// Five stream folders, merged by key (each stream on `id`) and appended: every table holds its stream once, and the
// streams of one batch travel in one transaction (a reader sees all of a batch's tables or none).
TEST(SnowflakeSink, TheStreamsOfABatchLandInOneTransactionAppendedOrMerged) {
  for (const std::string landing : {"append", "merge_by_key"}) {
    const std::string prefix = landing == "append" ? "sa" : "sm";
    PipelineFixture f(jsonl_files_to_sink_config("in/{stream}/*.jsonl",
                                                 snowflake_sink(SharedSnowflake().endpoint(), prefix + "_{stream}")) +
                      (landing == "append" ? "" : "    landing: merge_by_key\n    primary_key: id\n"));
    const auto expected = write_stream_files(f.root(), 3, 200);
    auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "64KiB"}});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::vector<std::string> tables;
    for (const auto& stream : stream_names()) {
      const std::string table = stream_table(prefix + "_", stream);
      tables.push_back(table);
      const auto counts = SharedSnowflake().query(
          fmt::format("SELECT count(*), count(DISTINCT id) FROM \"ANALYTICS\".\"PUBLIC\".\"{}\"", table));
      EXPECT_EQ(counts[0][0], std::to_string(expected.at(stream))) << landing << " " << stream;
      EXPECT_EQ(counts[0][1], counts[0][0]) << landing << " " << stream;
      const auto [rows, ids] = ledger_of(table);
      EXPECT_EQ(rows, ids) << landing << " " << stream;
    }
    const auto seen = stream_transactions(tables);
    ASSERT_FALSE(seen.tables_per_transaction.empty()) << landing;
    EXPECT_GT(*std::max_element(seen.tables_per_transaction.begin(), seen.tables_per_transaction.end()), 1)
        << landing << ": no transaction held several streams";
    // Every batch, all its streams, in one request (a batch split over two would be under two requestIds).
    ASSERT_FALSE(seen.request_ids_by_batch.empty()) << landing;
    for (const auto& [id, request_ids] : seen.request_ids_by_batch) {
      EXPECT_EQ(request_ids.size(), 1u) << landing << ": batch " << id << " was sent in several requests";
    }
  }
}

// The sink suite (tests/support/sink_suite.h) on Snowflake: tables of ANALYTICS.PUBLIC, and every batch of the
// kill loop sent under one requestId.
const SinkUnderTest& snowflake_under_test() {
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "Snowflake";
    s.lands_streams = true;
    s.sink = [](const std::string& table) { return snowflake_sink(SharedSnowflake().endpoint(), table); };
    s.rows = [](const PipelineFixture&, const std::string& table, const std::vector<std::string>& columns) {
      return joined_rows(SharedSnowflake().query(
          fmt::format("SELECT {} FROM \"ANALYTICS\".\"PUBLIC\".\"{}\"", select_list(columns), table)));
    };
    s.merges = true;
    s.ledger = [](const PipelineFixture&, const std::string& table) {
      const auto [rows, ids] = ledger_of(table);
      return std::pair<uint64_t, uint64_t>(std::stoull(rows), std::stoull(ids));
    };
    s.make_narrow_table = [](const PipelineFixture&, const std::string& table) {
      SharedSnowflake().query(fmt::format(
          "CREATE TABLE \"ANALYTICS\".\"PUBLIC\".\"{}\" (\"trip_id\" DECIMAL(38,0), \"duration_s\" DECIMAL(38,0))",
          table));
    };
    s.after_kill_loop = [](const PipelineFixture&, const std::string& table,
                           const std::map<std::string, std::string>&) { expect_one_request_id_per_batch(table); };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(Snowflake, snowflake_under_test());

}  // namespace skippr::test
