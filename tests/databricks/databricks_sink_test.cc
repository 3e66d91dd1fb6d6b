// The Databricks sink against tests/support/databricks_emulator (Files API + Statement Execution API, the SQL on a
// real DuckDB): every row once with one ledger row per batch, under SIGKILLs, lost DATA_DIRs and dropped answers;
// every batch's file uploaded under one name only and loaded once; setup mistakes stop with exit 2 and no secret.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include <signal.h>

#include "clients/databricks/databricks_client.h"
#include "sinks/databricks/dbx_types.h"
#include "support/chaos_loop.h"
#include "support/databricks_emulator.h"
#include "support/duckdb_probe.h"
#include "support/fault_proxy.h"
#include "support/pipeline_fixture.h"
#include "support/sink_suite.h"
#include "support/stream_files.h"

namespace skippr::test {
namespace {

std::string table_sql(const std::string& table) { return fmt::format("\"lakehouse\".\"analytics\".\"{}\"", table); }

// count, distinct ids and a content hash of a table in the emulator (every column as text).
std::string digest(const std::string& table) {
  const auto rows = SharedDatabricks().query(fmt::format(
      "SELECT count(*), count(DISTINCT trip_id), sum(hash(trip_id::VARCHAR, rider_id::VARCHAR, bike_id, event_type, "
      "epoch_us(event_time)::VARCHAR, station, duration_s::VARCHAR, firmware, metadata::VARCHAR))::VARCHAR FROM {}",
      table_sql(table)));
  return fmt::format("{} {} {}", rows[0][0], rows[0][1], rows[0][2]);
}

// (ledger rows of `table`, distinct batch ids among them).
std::pair<std::string, std::string> ledger_of(const std::string& table) {
  const auto rows = SharedDatabricks().query(fmt::format(
      "SELECT count(*), count(DISTINCT batch_id) FROM {} WHERE target_table = '`lakehouse`.`analytics`.`{}`'",
      table_sql("_skippr_batches"), table));
  return {rows[0][0], rows[0][1]};
}

std::string folder_of(const std::string& table) {
  return fmt::format("/Volumes/lakehouse/analytics/landing/_skippr/{}/", table);
}

// The idempotency key here is the file's name: the same rows were never loaded under two names (a batch re-read
// after its DATA_DIR was lost may upload them again under its new name, never loaded: its first upload had no landing
// file yet), no file of the table was loaded twice, and nothing of the table is left in the volume once its runs end.
void expect_one_name_per_batch_and_one_load(const std::string& table) {
  std::map<std::string, std::string> bytes_of;
  for (const auto& up : SharedDatabricks().uploads()) {
    if (up.created && up.path.starts_with(folder_of(table))) bytes_of[up.path] = up.sha256;
  }
  std::map<std::string, std::set<std::string>> loaded_names_by_bytes;
  std::map<std::string, int> loads;
  for (const auto& [file, into] : SharedDatabricks().loads()) {
    if (!file.starts_with(folder_of(table))) continue;
    ++loads[file + " into " + into];
    if (file.ends_with(".rows.json")) loaded_names_by_bytes[bytes_of.at(file)].insert(file);
  }
  EXPECT_FALSE(loaded_names_by_bytes.empty());
  for (const auto& [bytes, names] : loaded_names_by_bytes) {
    EXPECT_EQ(names.size(), 1u) << "the same rows were loaded from " << *names.begin() << " and " << *names.rbegin();
  }
  for (const auto& [file, n] : loads) EXPECT_EQ(n, 1) << file << " was loaded " << n << " times";
  for (const auto& file : SharedDatabricks().volume_files()) {
    EXPECT_FALSE(file.starts_with(folder_of(table))) << file << " was left in the volume";
  }
}

TEST(DatabricksSink, LandsEveryRowWithOneLedgerRowPerBatch) {
  PipelineFixture f(sample_to_sink_config(databricks_sink(SharedDatabricks().endpoint(), "trips"), 20000, 5));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  PipelineFixture duck(sample_to_duckdb_config(20000, 5));
  ASSERT_EQ(duck.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  constexpr const char* kDigest =
      "SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || sum(hash(concat_ws('|', trip_id, rider_id, "
      "bike_id, event_type, epoch_us(event_time), station, duration_s, firmware, metadata::VARCHAR)))::VARCHAR FROM {}";
  const std::string want = duckdb_value(duck.path("out.duckdb"), fmt::format(kDigest, "trips"));
  EXPECT_EQ(SharedDatabricks().query(fmt::format(kDigest, table_sql("trips")))[0][0], want);
  const auto [ledger_rows, ledger_ids] = ledger_of("trips");
  EXPECT_EQ(ledger_rows, ledger_ids);
  EXPECT_GT(std::stoi(ledger_rows), 1);
  expect_one_name_per_batch_and_one_load("trips");
  // Types as Databricks' catalog names them.
  const auto types = SharedDatabricks().query(
      "SELECT column_name || ':' || full_data_type FROM dbx_information_schema_columns WHERE table_name = 'trips' AND "
      "column_name IN ('trip_id', 'event_time', 'metadata', 'duration_s') ORDER BY column_name");
  ASSERT_EQ(types.size(), 4u);
  EXPECT_EQ(types[0][0], "duration_s:double");
  EXPECT_EQ(types[1][0], "event_time:timestamp");
  EXPECT_EQ(types[2][0], "metadata:string");
  EXPECT_EQ(types[3][0], "trip_id:bigint");
  // A second run finds everything landed and writes nothing.
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ledger_of("trips").first, ledger_rows);
}

// COPY INTO refused with COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED (SQLSTATE 25000, "please try again later": an
// orphaned COPY INTO of the same files is still committing) is waited out, not a configuration error: every row once.
TEST(DatabricksSink, ACopyIntoRefusedAsOverlappingAConcurrentOneIsRetried) {
  SharedDatabricks().fail_copies_as_duplicated(3);
  PipelineFixture f(sample_to_sink_config(databricks_sink(SharedDatabricks().endpoint(), "overlap"), 5000, 6));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                       {{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"SINK_RETRY_SECONDS", "120"}});
  const int left = SharedDatabricks().copies_left_to_fail();
  SharedDatabricks().fail_copies_as_duplicated(0);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(left, 0);
  EXPECT_EQ(SharedDatabricks().query(
                fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) FROM {}", table_sql("overlap")))[0][0],
            "5000 5000");
  const auto [ledger_rows, ledger_ids] = ledger_of("overlap");
  EXPECT_EQ(ledger_rows, ledger_ids);
  expect_one_name_per_batch_and_one_load("overlap");
}

// Answers lost after Databricks acted (uploads, COPY INTO, the ledger row), requests lost before it, throttling, and
// statements answered PENDING (polled by id): nothing lands twice and nothing is missing.
TEST(DatabricksSink, DroppedAnswersAndPendingStatementsLandOnce) {
  FaultProxy proxy(SharedDatabricks().endpoint());
  proxy.add({.method = "POST",
             .path_regex = "^/api/2.0/sql/statements$",
             .body_regex = "COPY INTO",
             .action = "drop_after_forward",
             .skip = 1,
             .times = 3});
  proxy.add({.method = "POST",
             .path_regex = "^/api/2.0/sql/statements$",
             .body_regex = "INSERT INTO",
             .action = "drop_after_forward",
             .skip = 2,
             .times = 3});
  proxy.add(
      {.method = "PUT", .path_regex = "^/api/2.0/fs/files/", .action = "drop_after_forward", .skip = 3, .times = 3});
  proxy.add({.method = "PUT", .path_regex = "landing[.]json", .action = "drop_before_forward", .skip = 1, .times = 2});
  const int throttled = proxy.add({.method = "POST",
                                   .path_regex = "^/api/2.0/sql/statements$",
                                   .action = "status",
                                   .status = 429,
                                   .code = "REQUEST_LIMIT_EXCEEDED",
                                   .skip = 2,
                                   .times = 3});
  PipelineFixture calm(sample_to_sink_config(databricks_sink(SharedDatabricks().endpoint(), "calm"), 30000, 8));
  ASSERT_EQ(
      calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}}).exit_code, 0);
  PipelineFixture f(
      sample_to_sink_config(databricks_sink(proxy.endpoint(), "dropped", ", timeout_seconds: 5"), 30000, 8));
  const int skipped_before = SharedDatabricks().skipped_loads();
  SharedDatabricks().answer_pending(true);
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                       {{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"SINK_RETRY_SECONDS", "120"}});
  SharedDatabricks().answer_pending(false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(digest("dropped"), digest("calm"));
  const auto [rows, ids] = ledger_of("dropped");
  EXPECT_EQ(rows, ids);
  EXPECT_EQ(rows, ledger_of("calm").first);
  expect_one_name_per_batch_and_one_load("dropped");
  EXPECT_EQ(proxy.hits(throttled), 3);
  EXPECT_GE(SharedDatabricks().skipped_loads() - skipped_before, 1)
      << "no COPY INTO was sent again after a lost answer";
}

// Killed between COPY INTO and the ledger row, with DATA_DIR lost as well: the landing file left in the volume is
// found when the next run asks the ledger where to resume, the batch is finished (its COPY INTO skipped, its ledger
// row written) and the run resumes after it. The table ends equal to an unkilled run's.
TEST(DatabricksSink, ABatchKilledBeforeItsLedgerRowIsFinishedByARunWithANewDataDir) {
  PipelineFixture calm(sample_to_sink_config(databricks_sink(SharedDatabricks().endpoint(), "whole"), 6000, 3));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "128KiB"}};
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);
  PipelineFixture f(sample_to_sink_config(databricks_sink(SharedDatabricks().endpoint(), "halfway"), 6000, 3));
  auto killed = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, armed_at(env, "sink.in_transaction", 2));
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  bool left = false;
  for (const auto& file : SharedDatabricks().volume_files()) {
    left |= file.starts_with(folder_of("halfway")) && file.ends_with(".landing.json");
  }
  ASSERT_TRUE(left) << "the kill left no landing file";
  std::filesystem::remove_all(f.path("data"));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("finishing batch"), std::string::npos) << run.err;
  EXPECT_EQ(digest("halfway"), digest("whole"));
  const auto [rows, ids] = ledger_of("halfway");
  EXPECT_EQ(rows, ids);
  expect_one_name_per_batch_and_one_load("halfway");
}

// JSON-lines files under `dir`: `rows` rows with ids 1..rows, spread over `files` files.
void write_jsonl_rows(const std::filesystem::path& dir, int files, int rows) {
  std::filesystem::create_directories(dir);
  for (int f = 0; f < files; ++f) {
    std::ofstream out(dir / fmt::format("part-{:02}.jsonl", f));
    for (int id = f + 1; id <= rows; id += files) {
      out << fmt::format(R"({{"id": {}, "customer": "customer-{}", "amount": {}.25, "note": "row {} of file {}"}})", id,
                         id % 977, id % 5000, id, f)
          << "\n";
    }
  }
}

std::string jsonl_to_databricks_config(const std::string& table) {
  return jsonl_files_to_sink_config("in/*.jsonl", databricks_sink(SharedDatabricks().endpoint(), table), "orders");
}

// count, distinct ids and a content hash of a table the JSONL files above landed in.
std::string orders_digest(const std::string& table) {
  return SharedDatabricks().query(fmt::format(
      "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || sum(hash(concat_ws('|', id, customer, amount, "
      "note)))::VARCHAR FROM {}",
      table_sql(table)))[0][0];
}

// Whether a statement the emulator still runs is a COPY INTO of `table`.
bool copy_running_into(const std::string& table) {
  for (const auto& statement : SharedDatabricks().running_statements()) {
    if (statement.starts_with("COPY INTO") && statement.find(fmt::format("`{}` FROM", table)) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Waits (up to a minute) until `done` holds; whether it did.
bool wait_until(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// However a test ends: no statement is slowed any more, and none still runs (an orphan would outlive the test).
struct NoSlowStatementsAfter {
  ~NoSlowStatementsAfter() {
    SharedDatabricks().slow_statements("", std::chrono::milliseconds(0));
    wait_until([] { return SharedDatabricks().running_statements().empty(); });
  }
};

// Issue 40: a process SIGKILLed while its batch's COPY INTO still executes in the warehouse (statements outlive their
// client), then DATA_DIR lost. The next run finds the batch's landing file and finishes it before it reads the
// ledger's tip: its own COPY INTO of that file is refused while the orphan still loads it (and waited out), then skips
// it; the run resumes after the batch instead of reading its rows again. Every row once, every BatchId once.
TEST(DatabricksSink, ACopyIntoStillRunningAfterItsProcessWasKilledLandsOnceAfterDataDirIsLost) {
  constexpr int kRows = 30000;
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "96KiB"}};
  PipelineFixture calm(jsonl_to_databricks_config("orders_calm"));
  write_jsonl_rows(calm.path("in"), 6, kRows);
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "orders", "--once"}, env).exit_code, 0);

  PipelineFixture f(jsonl_to_databricks_config("orders_killed"));
  write_jsonl_rows(f.path("in"), 6, kRows);
  auto spawned_env = env;
  spawned_env["DATA_DIR"] = f.path("data").string();
  spawned_env["SKIPPR_CONFIG_FILE"] = "";
  const NoSlowStatementsAfter cleanup;
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "orders", "--once"}, f.root(), spawned_env);
  // A few batches land, then the next COPY INTO runs for seconds: the process is killed inside it.
  const bool landed_some = wait_until([] { return std::stoi(ledger_of("orders_killed").first) >= 2; });
  SharedDatabricks().slow_statements("COPY INTO", std::chrono::seconds(5));
  const bool copying = landed_some && wait_until([] { return copy_running_into("orders_killed"); });
  ::kill(pid, SIGKILL);
  wait_process(pid);
  SharedDatabricks().slow_statements("", std::chrono::milliseconds(0));  // only the orphan stays slow
  ASSERT_TRUE(landed_some) << "no batch landed";
  ASSERT_TRUE(copying) << "no COPY INTO was running";
  ASSERT_TRUE(copy_running_into("orders_killed")) << "the COPY INTO ended before its process was killed";
  const int loads_before = static_cast<int>(SharedDatabricks().loads().size());

  std::filesystem::remove_all(f.path("data"));
  auto run = f.skipprd({"sync", "--pipeline", "orders", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("finishing batch"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED"), std::string::npos)
      << "the successor's COPY INTO did not meet the one still running:\n"
      << run.err;
  EXPECT_TRUE(wait_until([] { return !copy_running_into("orders_killed"); }));
  const std::string want = orders_digest("orders_calm");
  EXPECT_TRUE(want.starts_with(fmt::format("{} {} ", kRows, kRows))) << want;
  EXPECT_EQ(orders_digest("orders_killed"), want);
  const auto [rows, ids] = ledger_of("orders_killed");
  EXPECT_EQ(rows, ids) << "a BatchId is in the ledger twice";
  const auto ledgered = SharedDatabricks().query(fmt::format(
      "SELECT sum(\"rows\")::VARCHAR FROM {} WHERE target_table = '`lakehouse`.`analytics`.`orders_killed`'",
      table_sql("_skippr_batches")));
  EXPECT_EQ(ledgered[0][0], std::to_string(kRows)) << "the ledger does not account for every row once";
  EXPECT_GT(static_cast<int>(SharedDatabricks().loads().size()), loads_before);
  expect_one_name_per_batch_and_one_load("orders_killed");
}

// Killed after a batch's rows landed but before its rejected rows did; then the column is widened, so the batch read
// again would reject nothing. The retry finishes the landing file as written: the rejected rows land in the rejects
// table, and rows plus rejects are every row once.
TEST(DatabricksSink, ARetryFinishesTheLandingFileAsWrittenNotAsTheBatchWouldBeNow) {
  SharedDatabricks().query(
      fmt::format("CREATE TABLE {} (\"trip_id\" BIGINT, \"duration_s\" BIGINT)", table_sql("widened")));
  PipelineFixture f(sample_to_sink_config(databricks_sink(SharedDatabricks().endpoint(), "widened"), 3000, 4));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "1MiB"}};
  auto killed = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, armed_at(env, "sink.in_transaction", 1));
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  SharedDatabricks().query(fmt::format("ALTER TABLE {} ALTER duration_s TYPE DOUBLE", table_sql("widened")));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto landed = SharedDatabricks().query(fmt::format("SELECT count(*) FROM {}", table_sql("widened")))[0][0];
  const auto rejected =
      SharedDatabricks().query(fmt::format("SELECT count(*) FROM {}", table_sql("widened__skippr_rejected")))[0][0];
  EXPECT_GT(std::stoi(rejected), 0) << "the first attempt's rejected rows were dropped";
  EXPECT_EQ(std::stoi(landed) + std::stoi(rejected), 3000);
}

// A landing file the sink did not sign (someone with write access to the volume) is refused, not run: the run stops
// with exit 2 naming it, and its SQL never reaches the warehouse.
TEST(DatabricksSink, ALandingFileWithoutTheTokensSignatureIsNotRun) {
  auto client = DatabricksClient({.host = "h",
                                  .token = DatabricksEmulator::kToken,
                                  .warehouse_id = DatabricksEmulator::kWarehouse,
                                  .catalog = DatabricksEmulator::kCatalog,
                                  .schema = DatabricksEmulator::kSchema,
                                  .endpoint = SharedDatabricks().endpoint(),
                                  .where = "test"});
  const std::string forged =
      R"({"batch_id":"x","files":["abc-1-1.landing.json"],"landed_sql":"SELECT 1 WHERE false",)"
      R"("rejected":0,"signature":"00","statements":["DROP TABLE `lakehouse`.`analytics`.`victim`"]})";
  SharedDatabricks().query(fmt::format("CREATE TABLE {} (n BIGINT)", table_sql("victim")));
  ASSERT_TRUE(client.upload(folder_of("forged") + "bikehire/abc-1-1.landing.json", forged));
  PipelineFixture f(sample_to_sink_config(databricks_sink(SharedDatabricks().endpoint(), "forged"), 100));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("abc-1-1.landing.json is not signed with this sink's token"), std::string::npos) << run.err;
  EXPECT_EQ(SharedDatabricks().query(fmt::format("SELECT count(*) FROM {}", table_sql("victim")))[0][0], "0");
  for (const auto& seen : SharedDatabricks().statements())
    EXPECT_EQ(seen.statement.find("DROP TABLE"), std::string::npos);
}

DatabricksClient test_client() {
  DatabricksConfig config;
  config.host = "dbc-test.cloud.databricks.com";
  config.token = DatabricksEmulator::kToken;
  config.warehouse_id = DatabricksEmulator::kWarehouse;
  config.catalog = DatabricksEmulator::kCatalog;
  config.schema = DatabricksEmulator::kSchema;
  config.endpoint = SharedDatabricks().endpoint();
  config.where = "test";
  return DatabricksClient(config);
}

// The Files API as the reference defines it and the client uses it: an upload with overwrite=false meets the file
// that is there (409) and says so without replacing it; a listing is followed across pages; a missing file or
// directory is 404, which the client reads as "none".
TEST(DatabricksApi, UploadsAreWrittenOnceAndListingsFollowTheirPages) {
  auto client = test_client();
  const std::string dir = "/Volumes/lakehouse/analytics/landing/api-test";
  auto first = client.upload(dir + "/a.json", "first");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, UploadOutcome::kCreated);
  auto second = client.upload(dir + "/a.json", "second");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(*second, UploadOutcome::kAlreadyThere);
  EXPECT_EQ(client.download(dir + "/a.json").value().value_or(""), "first");
  for (const char* name : {"b.json", "c d.json", "e.json", "f.json"})
    ASSERT_TRUE(client.upload(dir + "/" + name, name));
  auto names = client.list_files(dir);
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"a.json", "b.json", "c d.json", "e.json", "f.json"}));
  ASSERT_TRUE(client.remove(dir + "/a.json"));
  ASSERT_TRUE(client.remove(dir + "/a.json")) << "removing a file that is gone is fine";
  EXPECT_FALSE(client.download(dir + "/a.json").value());
  EXPECT_TRUE(client.list_files(dir + "/nothing-here").value().empty());
}

// The statement request as the Statement Execution API's reference gives it (statement, warehouse_id, catalog,
// schema, wait_timeout 0s or within 5-50 s with on_wait_timeout CONTINUE, format JSON_ARRAY, disposition INLINE; a
// bearer token), results read from result.data_array, a failed statement's error.message carried into the error,
// PENDING statements followed by id.
TEST(DatabricksApi, TheStatementRequestHasTheDocumentedShape) {
  auto client = test_client();
  auto rows = client.execute("SELECT 1 AS one, NULL AS nothing, 'it''s' AS text");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->at(0).at(0).value_or(""), "1");
  EXPECT_FALSE(rows->at(0).at(1));
  EXPECT_EQ(rows->at(0).at(2).value_or(""), "it's");
  const auto body = nlohmann::json::parse(SharedDatabricks().statements().back().body);
  std::set<std::string> keys;
  for (const auto& [key, value] : body.items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"statement", "warehouse_id", "catalog", "schema", "wait_timeout",
                                         "on_wait_timeout", "format", "disposition"}));
  EXPECT_EQ(body["warehouse_id"], DatabricksEmulator::kWarehouse);
  EXPECT_EQ(body["wait_timeout"], "10s") << "a read waits for its rows (5-50 s, within the HTTP timeout)";
  EXPECT_EQ(body["on_wait_timeout"], "CONTINUE");
  EXPECT_EQ(body["format"], "JSON_ARRAY");
  EXPECT_EQ(body["disposition"], "INLINE");
  auto bad = client.execute("SELECT * FROM `lakehouse`.`analytics`.`no_such_table`");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kConfig);
  EXPECT_NE(bad.error().message.find("no_such_table"), std::string::npos) << bad.error().message;
  // A write is submitted asynchronously (wait_timeout 0s) and followed by its id.
  ASSERT_TRUE(client.execute("CREATE TABLE IF NOT EXISTS `lakehouse`.`analytics`.`shape` (n BIGINT)", true));
  EXPECT_EQ(nlohmann::json::parse(SharedDatabricks().statements().back().body)["wait_timeout"], "0s");
  SharedDatabricks().answer_pending(true);
  auto polled = client.execute("SELECT 42");
  SharedDatabricks().answer_pending(false);
  ASSERT_TRUE(polled) << polled.error().message;
  EXPECT_EQ(polled->at(0).at(0).value_or(""), "42");
}

// COPY INTO as the sink writes it, against the emulator's reading of it: a file loaded once, skipped the second time.
TEST(DatabricksApi, CopyIntoLoadsAFileOnce) {
  auto client = test_client();
  const std::string dir = "/Volumes/lakehouse/analytics/landing/copy-test";
  ASSERT_TRUE(client.upload(dir + "/one.rows.json", "{\"n\":\"1\",\"s\":\"a\"}\n{\"n\":\"2\",\"s\":null}\n"));
  ASSERT_TRUE(client.execute("CREATE TABLE IF NOT EXISTS `lakehouse`.`analytics`.`copied` (n BIGINT, s STRING)"));
  const std::string copy = fmt::format(
      "COPY INTO `lakehouse`.`analytics`.`copied` FROM (SELECT CAST(`n` AS BIGINT) AS `n`, `s` AS `s` FROM '{}') "
      "FILEFORMAT = JSON FILES = ('one.rows.json') FORMAT_OPTIONS ('primitivesAsString' = 'true')",
      dir);
  ASSERT_TRUE(client.execute(copy));
  ASSERT_TRUE(client.execute(copy));
  EXPECT_EQ(SharedDatabricks().query("SELECT count(*), sum(n) FROM \"lakehouse\".\"analytics\".\"copied\"")[0],
            (std::vector<std::string>{"2", "3"}));
}

TEST(DatabricksApi, TheEmulatorsDialect) {
  auto local = [](const std::string& p) { return std::filesystem::path("/tmp") / p.substr(1); };
  EXPECT_EQ(databricks_to_duckdb_sql("CREATE TABLE IF NOT EXISTS `c`.`s`.`t` (a STRING, b TIMESTAMP, c TIMESTAMP_NTZ, "
                                     "d BINARY, `rows` BIGINT) TBLPROPERTIES ('x' = 'y')",
                                     local),
            "CREATE TABLE IF NOT EXISTS \"c\".\"s\".\"t\" (a VARCHAR, b TIMESTAMPTZ, c TIMESTAMP, d BLOB, \"rows\" "
            "BIGINT)");
  EXPECT_EQ(databricks_to_duckdb_sql("ALTER TABLE `t` ADD COLUMNS (`x` STRING)", local),
            "ALTER TABLE \"t\" ADD COLUMN \"x\" VARCHAR");
  EXPECT_EQ(databricks_to_duckdb_sql("SELECT s.* EXCEPT (`a`), unbase64(b), 'it\\'s STRING' FROM t", local),
            "SELECT s.* EXCLUDE (\"a\"), from_base64(b), 'it''s STRING' FROM t");
  EXPECT_EQ(dbx_quote_identifier("we`ird"), "`we``ird`");
  EXPECT_EQ(dbx_quote_literal("it's a \\ path\n"), "'it\\'s a \\\\ path\\n'");
  EXPECT_EQ(files_api_path("/Volumes/c/s/v/a b.json"), "/Volumes/c/s/v/a%20b.json");
}

// The type rules as information_schema.columns.full_data_type spells types: which columns take which fields, the
// narrower integers and decimals, VARCHAR(n)'s length (a longer value is a rejected row, not a failed COPY INTO).
TEST(DatabricksApi, TheTypeRules) {
  const ColumnRules rules = dbx_column_rules();
  EXPECT_TRUE(rules.same_name("Trip_ID", "trip_id"));
  EXPECT_TRUE(rules.accepts("bigint", Type::kInt64));
  EXPECT_TRUE(rules.accepts("decimal(38,0)", Type::kInt64));
  EXPECT_FALSE(rules.accepts("bigint", Type::kDouble));
  EXPECT_TRUE(rules.accepts("string", Type::kJson));
  EXPECT_TRUE(rules.accepts("timestamp_ntz", Type::kTimestamp));
  EXPECT_EQ(rules.int_range("int")->second, 2147483647);
  EXPECT_FALSE(rules.int_range("bigint"));
  EXPECT_DOUBLE_EQ(*rules.magnitude_limit("decimal(10,2)"), 1e8);
  EXPECT_FALSE(rules.text_problem("varchar(3)", "abc"));
  EXPECT_FALSE(rules.text_problem("varchar(3)", "d\xc3\xa9j"));  // three characters, four bytes
  EXPECT_TRUE(rules.text_problem("varchar(3)", "abcd"));
  EXPECT_FALSE(rules.text_problem("string", std::string(100000, 'x')));
  EXPECT_EQ(dbx_convert("`v`", "binary"), "unbase64(`v`)");
  EXPECT_EQ(dbx_convert("`v`", "decimal(38,0)"), "CAST(`v` AS DECIMAL(38,0))");
}

// The sink suite (tests/support/sink_suite.h) on Databricks: tables of lakehouse.analytics, nothing left in the
// volume after a landing, kills inside the landing first (it has no transaction around its statements), and every
// batch's file uploaded under one name and loaded once.
const SinkUnderTest& databricks_under_test() {
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "Databricks";
    s.lands_streams = true;
    s.lands_tables_one_by_one = true;
    s.sink = [](const std::string& table) { return databricks_sink(SharedDatabricks().endpoint(), table); };
    s.rows = [](const PipelineFixture&, const std::string& table, const std::vector<std::string>& columns) {
      return joined_rows(
          SharedDatabricks().query(fmt::format("SELECT {} FROM {}", select_list(columns), table_sql(table))));
    };
    s.merges = true;
    s.ledger = [](const PipelineFixture&, const std::string& table) {
      const auto [rows, ids] = ledger_of(table);
      return std::pair<uint64_t, uint64_t>(std::stoull(rows), std::stoull(ids));
    };
    s.make_narrow_table = [](const PipelineFixture&, const std::string& table) {
      SharedDatabricks().query(
          fmt::format("CREATE TABLE {} (\"trip_id\" BIGINT, \"duration_s\" BIGINT)", table_sql(table)));
    };
    s.after_landing = [](const PipelineFixture&, const std::string& table) {
      for (const auto& file : SharedDatabricks().volume_files()) {
        EXPECT_FALSE(file.starts_with(folder_of(table))) << file << " was left in the volume";
      }
    };
    s.after_kill_loop = [](const PipelineFixture&, const std::string& table,
                           const std::map<std::string, std::string>&) {
      expect_one_name_per_batch_and_one_load(table);
    };
    s.kills_inside_landing = 8;
    // Each a mistake no retry mends: exit 2 before anything is read, without the token (right or wrong).
    const std::string good = databricks_sink(SharedDatabricks().endpoint(), "t");
    const auto with = [good](const std::string& from, const std::string& to) {
      std::string sink = good;
      return sink.replace(sink.find(from), from.size(), to);
    };
    const std::string token = DatabricksEmulator::kToken;
    s.mistakes = {
        {with(token, "dapi-wrong-token-0000"), "refused the token", "dapi-wrong-token"},
        {with(DatabricksEmulator::kWarehouse, "0000000000000000"), "SQL warehouse 0000000000000000 does not exist",
         token},
        {with("catalog: lakehouse", "catalog: nope"), "NO_SUCH_CATALOG_EXCEPTION", token},
        {with("schema: analytics", "schema: nope"), "SCHEMA_NOT_FOUND", token},
        {with("volume: landing", "volume: /Volumes/lakehouse/analytics/missing"),
         "volume /Volumes/lakehouse/analytics/missing does not exist", token},
        {with("volume: landing", "volume: a/b"), "volume must be a volume's name", token},
    };
    s.chaos_min_seconds = 0.05;
    s.chaos_max_seconds = 0.8;
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(Databricks, databricks_under_test());

}  // namespace skippr::test
