// The BigQuery sink against tests/support/bigquery_emulator (the REST API on a real DuckDB): every row once with one
// ledger row per batch, under SIGKILLs and lost answers, every job sent again under its own id (409, then jobs.get);
// refused credentials and a missing dataset stop with exit 2 and no secret.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "support/bigquery_emulator.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/fault_proxy.h"
#include "support/pipeline_fixture.h"
#include "support/process.h"
#include "support/sink_suite.h"

namespace skippr::test {
namespace {

std::string digest(const std::string& table) {
  const auto rows = SharedBigQuery().query(fmt::format(
      "SELECT count(*), count(DISTINCT trip_id), sum(hash(concat_ws('|', trip_id, rider_id, bike_id, event_type, "
      "epoch_us(event_time), station, duration_s, firmware, metadata)))::VARCHAR FROM \"analytics\".\"{}\"",
      table));
  return fmt::format("{} {} {}", rows[0][0], rows[0][1], rows[0][2]);
}

std::pair<std::string, std::string> ledger_of(const std::string& table) {
  const auto rows = SharedBigQuery().query(fmt::format(
      "SELECT count(*), count(DISTINCT batch_id) FROM \"analytics\".\"_skippr_batches\" WHERE target_table = "
      "'`skippr-test.analytics.{}`'",
      table));
  return {rows[0][0], rows[0][1]};
}

// No staging table is left once every batch landed.
void expect_no_stage_left(const std::string& table) {
  const auto stages = SharedBigQuery().query(
      fmt::format("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'analytics' AND table_name LIKE "
                  "'{}__skippr_stage_%'",
                  table));
  EXPECT_EQ(stages[0][0], "0") << "staging tables left behind";
}

TEST(BigQuerySink, LandsEveryRowWithOneLedgerRowPerBatch) {
  PipelineFixture f(sample_to_sink_config(bigquery_sink(SharedBigQuery().endpoint(), "trips"), 20000, 5));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  PipelineFixture duck(sample_to_duckdb_config(20000, 5));
  ASSERT_EQ(duck.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  constexpr const char* kDigest =
      "SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || sum(hash(concat_ws('|', trip_id, "
      "epoch_us(event_time), station, duration_s, metadata::VARCHAR)))::VARCHAR FROM {}";
  EXPECT_EQ(SharedBigQuery().query(fmt::format(kDigest, "\"analytics\".\"trips\""))[0][0],
            duckdb_value(duck.path("out.duckdb"), fmt::format(kDigest, "trips")));
  const auto [rows, ids] = ledger_of("trips");
  EXPECT_EQ(rows, ids);
  EXPECT_GT(std::stoi(rows), 1);
  expect_no_stage_left("trips");
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ledger_of("trips").first, rows);
}

// Answers lost after BigQuery acted, on load and transaction jobs, and jobs reported RUNNING: every row once, and
// each job id inserted once (a resend met 409 and read the job).
TEST(BigQuerySink, LostAnswersAndRunningJobsLandOnceUnderTheirJobIds) {
  FaultProxy proxy(SharedBigQuery().endpoint());
  proxy.add({.method = "POST",
             .path_regex = "^/upload/bigquery/v2/.*/jobs",
             .action = "drop_after_forward",
             .skip = 1,
             .times = 3});
  proxy.add({.method = "POST",
             .path_regex = "^/bigquery/v2/projects/[^/]+/jobs$",
             .action = "drop_after_forward",
             .skip = 2,
             .times = 3});
  // Unavailable queries (503): retried, nothing lost.
  const int queries_down = proxy.add({.method = "POST",
                                      .path_regex = "^/bigquery/v2/projects/[^/]+/queries",
                                      .action = "status",
                                      .status = 503,
                                      .code = "backendError",
                                      .skip = 1,
                                      .times = 2});
  PipelineFixture calm(sample_to_sink_config(bigquery_sink(SharedBigQuery().endpoint(), "calm"), 30000, 8));
  ASSERT_EQ(
      calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}}).exit_code, 0);
  SharedBigQuery().answer_running(true);
  PipelineFixture f(
      sample_to_sink_config(bigquery_sink(proxy.endpoint(), "dropped", ", timeout_seconds: 10"), 30000, 8));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                       {{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"SINK_RETRY_SECONDS", "120"}});
  SharedBigQuery().answer_running(false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(digest("dropped"), digest("calm"));
  const auto [rows, ids] = ledger_of("dropped");
  EXPECT_EQ(rows, ids);
  EXPECT_EQ(rows, ledger_of("calm").first);
  expect_no_stage_left("dropped");
  std::map<std::string, int> executed;
  int duplicates = 0;
  for (const auto& job : SharedBigQuery().jobs()) {
    if (job.duplicate)
      ++duplicates;
    else
      ++executed[job.job_id];
  }
  for (const auto& [id, n] : executed) EXPECT_EQ(n, 1) << id;
  EXPECT_GE(duplicates, 1) << "no lost answer was followed by a resend of the same job id";
  EXPECT_EQ(proxy.hits(queries_down), 2);
}

// What BigQuery's documentation and official client say is transient: jobs.insert throttled with 403
// rateLimitExceeded (not missing roles), jobs.get answering 404 right after a 409 (the job exists, the read does not
// see it yet), and jobs that end in jobInternalError / jobRateLimitExceeded — more of them in a row than one run
// tries ids for. Each is met and waited out; every row lands once, every batch once in the ledger.
TEST(BigQuerySink, ThrottlingA404AfterAConflictAndTransientJobErrorsAreWaitedOut) {
  PipelineFixture calm(sample_to_sink_config(bigquery_sink(SharedBigQuery().endpoint(), "calm_t"), 20000, 12));
  ASSERT_EQ(
      calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}}).exit_code, 0);
  for (const auto& [reason, table] : std::map<std::string, std::string>{{"jobInternalError", "faulty_internal"},
                                                                        {"jobRateLimitExceeded", "faulty_rate"}}) {
    FaultProxy proxy(SharedBigQuery().endpoint());
    // Lost answers to inserts: the resend of the same id meets 409, then the 404.
    proxy.add({.method = "POST", .path_regex = "/jobs", .action = "drop_after_forward", .skip = 1, .times = 2});
    SharedBigQuery().inject(
        {.rate_limited_inserts = 3, .not_found_after_conflict = 2, .failed_jobs = 6, .failed_job_reason = reason});
    PipelineFixture f(sample_to_sink_config(bigquery_sink(proxy.endpoint(), table), 20000, 12));
    auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                         {{"BUFFER_THRESHOLD_BYTES", "256KiB"}, {"SINK_RETRY_SECONDS", "120"}});
    const BigQueryFaults left = SharedBigQuery().faults_left();
    SharedBigQuery().inject({});
    ASSERT_EQ(run.exit_code, 0) << reason << ": " << run.err;
    EXPECT_EQ(left.rate_limited_inserts, 0);
    EXPECT_EQ(left.not_found_after_conflict, 0) << "no 409 was followed by a 404";
    EXPECT_EQ(left.failed_jobs, 0);
    EXPECT_EQ(digest(table), digest("calm_t")) << reason;
    const auto [rows, ids] = ledger_of(table);
    EXPECT_EQ(rows, ids);
    EXPECT_EQ(rows, ledger_of("calm_t").first);
    expect_no_stage_left(table);
  }
}

// Statements made slow on the shared emulator for as long as this lives.
struct SlowStatements {
  SlowStatements(const std::string& containing, std::chrono::milliseconds delay) {
    SharedBigQuery().slow_statements(containing, delay);
  }
  ~SlowStatements() { off(); }
  static void off() { SharedBigQuery().slow_statements("", std::chrono::milliseconds(0)); }
};

bool a_landing_runs() {
  for (const auto& id : SharedBigQuery().running_jobs()) {
    if (id.starts_with("skippr_land_")) return true;
  }
  return false;
}

// True once no job runs any more (within `seconds`).
bool jobs_ended(int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!SharedBigQuery().running_jobs().empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// A BigQuery job runs on, and commits, after the process that inserted it is SIGKILLed. Killed while a landing
// transaction is still executing (its rows written, its ledger row not yet), then DATA_DIR lost: the next run has a
// new lineage and reads the ledger tip to know where to resume. The fence it takes first waits for that transaction,
// so the tip holds the batch and the run resumes after it: every row once, every batch once in the ledger. Without the
// fence the run re-reads that batch's rows and lands them under new ids, and the old job's commit doubles them.
TEST(BigQuerySink, ALandingStillRunningAfterASigkillThenALostDataDirLandsEveryRowOnce) {
  constexpr uint64_t kRows = 12000;
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "128KiB"}};
  PipelineFixture calm(sample_to_sink_config(bigquery_sink(SharedBigQuery().endpoint(), "outlived_calm"), kRows, 7));
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);

  PipelineFixture f(sample_to_sink_config(bigquery_sink(SharedBigQuery().endpoint(), "outlived"), kRows, 7));
  // The ledger row comes last in a landing transaction: a job sleeping before it holds the fence and the batch's rows.
  SlowStatements slow("INSERT INTO `skippr-test`.`analytics`.`_skippr_batches`", std::chrono::seconds(4));
  std::map<std::string, std::string> spawn_env = env;
  spawn_env["DATA_DIR"] = f.path("data").string();
  spawn_env["SKIPPR_CONFIG_FILE"] = "";
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once"}, f.root(), spawn_env);
  // Killed in its second landing or later, so the run that follows resumes after a batch of the killed one.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!(ledger_of("outlived").first != "0" && a_landing_runs()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool caught = a_landing_runs();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the transaction's sleep
  kill(pid, SIGKILL);
  ASSERT_EQ(wait_process(pid), 137) << read_text(f.path("spawned.err"));
  ASSERT_TRUE(caught) << "no landing was running when the process was killed";
  ASSERT_TRUE(a_landing_runs()) << "the landing ended before the kill";
  SlowStatements::off();  // for the jobs to come; the one running keeps its sleep
  std::filesystem::remove_all(f.path("data"));

  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(jobs_ended(60)) << "a job is still running";
  const std::string want = digest("outlived_calm");
  EXPECT_TRUE(want.starts_with(fmt::format("{} {} ", kRows, kRows))) << want;
  EXPECT_EQ(digest("outlived"), want) << "rows lost or landed twice";
  const auto [rows, ids] = ledger_of("outlived");
  EXPECT_EQ(rows, ids) << "a batch is in the ledger twice";
  // The killed run's job committed (after the kill): its batch is there, under its lineage.
  EXPECT_EQ(SharedBigQuery().query("SELECT count(DISTINCT lineage) FROM \"analytics\".\"_skippr_batches\" WHERE "
                                   "target_table = '`skippr-test.analytics.outlived`'")[0][0],
            "2");
  expect_no_stage_left("outlived");
}

// The jobs the sink inserts, field by field as the REST reference's Job resource has them: jobReference (projectId,
// jobId of letters, digits, '_' and '-', location), configuration.load (destinationTable, sourceFormat
// NEWLINE_DELIMITED_JSON, schema.fields of name/type/mode, createDisposition, writeDisposition) and
// configuration.query (query, useLegacySql false).
TEST(BigQueryApi, TheJobsHaveTheDocumentedShape) {
  PipelineFixture f(sample_to_sink_config(bigquery_sink(SharedBigQuery().endpoint(), "shaped"), 100, 2));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  nlohmann::json load, query;
  for (const auto& job : SharedBigQuery().jobs()) {
    const auto resource = nlohmann::json::parse(job.resource);
    if (job.kind == "load" &&
        resource["configuration"]["load"]["destinationTable"].value("tableId", "").starts_with("shaped__")) {
      load = resource;
    }
    if (job.kind == "query" &&
        resource["configuration"]["query"].value("query", "").find("analytics.shaped`") != std::string::npos) {
      query = resource;
    }
  }
  ASSERT_TRUE(load.is_object() && query.is_object());
  for (const auto* job : {&load, &query}) {
    const auto& ref = (*job)["jobReference"];
    EXPECT_EQ(ref["projectId"], "skippr-test");
    EXPECT_EQ(ref["location"], "US");
    EXPECT_TRUE(std::regex_match(ref["jobId"].get<std::string>(), std::regex("[A-Za-z0-9_-]{1,1024}")));
  }
  const auto& l = load["configuration"]["load"];
  EXPECT_EQ(l["destinationTable"]["projectId"], "skippr-test");
  EXPECT_EQ(l["destinationTable"]["datasetId"], "analytics");
  EXPECT_EQ(l["sourceFormat"], "NEWLINE_DELIMITED_JSON");
  EXPECT_EQ(l["createDisposition"], "CREATE_IF_NEEDED");
  EXPECT_EQ(l["writeDisposition"], "WRITE_TRUNCATE");
  for (const auto& field : l["schema"]["fields"]) {
    EXPECT_TRUE(field.contains("name") && field.contains("type") && field.value("mode", "") == "NULLABLE") << field;
  }
  EXPECT_EQ(query["configuration"]["query"]["useLegacySql"], false);
  EXPECT_TRUE(query["configuration"]["query"].value("query", "").starts_with("BEGIN TRANSACTION"));
}

TEST(BigQueryApi, JobIdsAndTheEmulatorsDialect) {
  EXPECT_EQ(bigquery_to_duckdb_sql("CREATE TABLE IF NOT EXISTS `skippr-test.analytics.t` (a INT64, b STRING, c "
                                   "TIMESTAMP, d BYTES, e FLOAT64, f BOOL)",
                                   "skippr-test"),
            "CREATE TABLE IF NOT EXISTS \"analytics\".\"t\" (a BIGINT, b VARCHAR, c TIMESTAMPTZ, d BLOB, e DOUBLE, f "
            "BOOLEAN)");
  EXPECT_EQ(bigquery_to_duckdb_sql("SELECT 'it\\'s', \"x\"; COMMIT TRANSACTION", "p"), "SELECT 'it''s', 'x'; COMMIT");
  EXPECT_EQ(bigquery_to_duckdb_sql("SELECT 1 FROM `p`.`d`.`_skippr_batches`", "p"),
            "SELECT 1 FROM \"d\".\"_skippr_batches\"");
  // GoogleSQL's LIKE escapes with a backslash (written twice in the literal), and has no ESCAPE clause.
  EXPECT_EQ(bigquery_to_duckdb_sql("SELECT 1 WHERE t LIKE 'a\\\\_%'", "p"),
            "SELECT 1 WHERE t LIKE 'a\\_%' ESCAPE '\\'");
  const auto matches = [](const std::string& pattern) {
    return SharedBigQuery().query(bigquery_to_duckdb_sql("SELECT 'a_b' LIKE " + pattern, "p"))[0][0];
  };
  EXPECT_EQ(matches("'a\\\\_b'"), "true");
  EXPECT_EQ(matches("'a\\\\_%'"), "true");
  EXPECT_EQ(bigquery_to_duckdb_sql("SELECT 'axb' LIKE 'a\\\\_b'", "p"), "SELECT 'axb' LIKE 'a\\_b' ESCAPE '\\'");
  EXPECT_EQ(SharedBigQuery().query(bigquery_to_duckdb_sql("SELECT 'axb' LIKE 'a\\\\_b'", "p"))[0][0], "false");
}

// The sink suite (tests/support/sink_suite.h) on BigQuery: tables of the dataset "analytics", staging tables swept
// after every landing, and a kill loop whose killed load jobs outlive their runs.
const SinkUnderTest& bigquery_under_test() {
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "BigQuery";
    s.lands_streams = true;
    s.sink = [](const std::string& table) { return bigquery_sink(SharedBigQuery().endpoint(), table); };
    s.rows = [](const PipelineFixture&, const std::string& table, const std::vector<std::string>& columns) {
      return joined_rows(
          SharedBigQuery().query(fmt::format("SELECT {} FROM \"analytics\".\"{}\"", select_list(columns), table)));
    };
    s.merges = true;
    s.ledger = [](const PipelineFixture&, const std::string& table) {
      const auto [rows, ids] = ledger_of(table);
      return std::pair<uint64_t, uint64_t>(std::stoull(rows), std::stoull(ids));
    };
    s.make_narrow_table = [](const PipelineFixture&, const std::string& table) {
      SharedBigQuery().query(
          fmt::format("CREATE TABLE \"analytics\".\"{}\" (\"trip_id\" BIGINT, \"duration_s\" BIGINT)", table));
    };
    s.after_landing = [](const PipelineFixture&, const std::string& table) { expect_no_stage_left(table); };
    // A key the token endpoint refuses, and a dataset that is not there: exit 2 before anything is read, without the
    // key or the access token the good key was given.
    const std::string endpoint = SharedBigQuery().endpoint();
    const std::string key = read_text(SharedBigQuery().credentials_file());
    s.mistakes = {
        {fmt::format("BigQuery: {{ project: skippr-test, dataset: analytics, table: t, credentials_file: \"{}\", "
                     "endpoint: \"{}\" }}",
                     SharedBigQuery().stranger_credentials_file().string(), endpoint),
         "the service-account key is refused", key.substr(key.find("MII"), 40)},
        {fmt::format("BigQuery: {{ project: skippr-test, dataset: nope, table: t, credentials_file: \"{}\", "
                     "endpoint: \"{}\" }}",
                     SharedBigQuery().credentials_file().string(), endpoint),
         "dataset nope does not exist", "ya29."},
    };
    // A load job of a killed run may finish after the run that followed it swept the stages (jobs outlive their
    // client); a run that starts without DATA_DIR sweeps every stage of the lineages it took the table over from.
    s.after_kill_loop = [](const PipelineFixture& f, const std::string& table,
                           const std::map<std::string, std::string>& env) {
      const auto want = digest(table);
      while (!SharedBigQuery().running_jobs().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::filesystem::remove_all(f.path("data"));
      auto sweep = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
      ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
      EXPECT_EQ(digest(table), want);
      expect_no_stage_left(table);
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(BigQuery, bigquery_under_test());

}  // namespace skippr::test
