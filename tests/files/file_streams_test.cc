// Streams from the File source: `in/{stream}/*.jsonl` names each file's stream after its folder, and a DuckDB sink
// with `table: raw_{stream}` lands each in a table of its own, all of a batch's streams in one transaction. Under
// kill -9 (and DATA_DIR lost between kills) every table must end equal to an unkilled run's, each row once.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"
#include "support/stream_files.h"

namespace skippr::test {
namespace {

const std::vector<std::string>& kStreams = stream_names();

std::string streams_config(const std::string& table = "raw_{stream}") {
  return fmt::format(R"(data_sources:
  files:
    File: {{ path: "in/{{stream}}/*.jsonl" }}
data_sinks:
  warehouse:
    DuckDB: {{ path: out.duckdb, table: "{}" }}
pipelines:
  many:
    data_source: data_sources.files
    data_sink: data_sinks.warehouse
)",
                     table);
}

std::string table_of(const std::string& stream) { return stream_table("raw_", stream); }

// The sync_complete event of a run's `--output json` lines (null when there is none).
nlohmann::json sync_complete(const std::string& out) {
  nlohmann::json complete;
  std::istringstream events(out);
  for (std::string line; std::getline(events, line);) {
    auto event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_object() && event.value("event", "") == "sync_complete") complete = event;
  }
  return complete;
}

// SHOW STATS FOR many, stat -> value.
std::map<std::string, std::string> show_stats(const PipelineFixture& fixture) {
  auto stats = fixture.skipprd({"query", "--sql", "SHOW STATS FOR many", "--output", "json"});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  std::map<std::string, std::string> shown;
  std::istringstream lines(stats.out);
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_object()) shown[row.value("stat", "")] = row.value("value", "");
  }
  return shown;
}

// rows | distinct ids | an order-independent hash of every column, per stream's table.
std::map<std::string, std::string> digests(const std::filesystem::path& db) {
  std::map<std::string, std::string> out;
  for (const auto& stream : kStreams) {
    out[stream] = duckdb_value(db, fmt::format("SELECT count(*) || '|' || count(DISTINCT id) || '|' || "
                                               "coalesce(sum(hash(t)), 0) FROM {} AS t",
                                               table_of(stream)));
  }
  return out;
}

TEST(FileStreams, EachFolderLandsInItsOwnTableInOneTransactionPerBatch) {
  PipelineFixture fixture(streams_config());
  const auto rows = write_stream_files(fixture.root(), 3, 400);
  auto run = fixture.skipprd({"sync", "--pipeline", "many", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "40000"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto db = fixture.path("out.duckdb");
  for (const auto& [stream, count] : rows) {
    EXPECT_EQ(duckdb_value(db, fmt::format("SELECT count(*) FROM {}", table_of(stream))), std::to_string(count));
  }
  // The stream's own columns only: users has no amount column, events gained country.
  EXPECT_EQ(duckdb_value(db,
                         "SELECT count(*) FROM information_schema.columns WHERE table_name = 'raw_users' AND "
                         "column_name = 'amount'"),
            "0");
  EXPECT_EQ(duckdb_value(db, "SELECT count(country) FROM raw_events"), "800");
  // One ledger row per (table, batch); a batch that held several streams has a row in each of their tables, and
  // they were written together: every batch id of the ledger appears once per table it landed in.
  EXPECT_EQ(duckdb_value(db,
                         "SELECT count(*) FROM (SELECT target_table, batch_id FROM _skippr_batches GROUP BY ALL "
                         "HAVING count(*) > 1)"),
            "0");
  EXPECT_NE(duckdb_value(db, "SELECT max(n) FROM (SELECT count(*) AS n FROM _skippr_batches GROUP BY batch_id)"), "1")
      << "no batch held more than one stream: the test does not test transactions across tables";
  EXPECT_EQ(duckdb_value(db, "SELECT sum(rows) FROM _skippr_batches"), "6000");

  // A second run reads nothing again; a new file in one folder lands in that stream's table only, and its bad line
  // is a dead letter of that stream.
  {
    std::ofstream more(fixture.path("in/users/100.jsonl"));
    more << R"({"id":100000,"stream_no":1,"label":"late"})"
         << "\n"
         << R"({"id":100001,"stream_no":)"
         << "\n";
  }
  run = fixture.skipprd({"sync", "--pipeline", "many", "--once", "--output", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // This run's rows of each stream, in its sync_complete event.
  const nlohmann::json complete = sync_complete(run.out);
  EXPECT_EQ(complete["stream_rows_landed"], (nlohmann::json{{"users", 1}})) << run.out;
  EXPECT_EQ(complete["stream_dead_letters"], (nlohmann::json{{"users", 1}})) << run.out;
  EXPECT_NE(read_text(fixture.path("data/pipelines/many/deadletter.jsonl")).find(R"("stream":"users")"),
            std::string::npos);
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM raw_users"), "1201");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM raw_orders"), "1200");
  // SHOW STATS counts each stream's rows over both runs.
  auto landed = show_stats(fixture);
  EXPECT_EQ(landed["rows_landed"], "6001");
  EXPECT_EQ(landed["dead_letters[users]"], "1");
  EXPECT_EQ(landed.count("dead_letters[orders]"), 0u);
  for (const auto& [stream, count] : rows) {
    EXPECT_EQ(landed["rows_landed[" + stream + "]"], std::to_string(count + (stream == "users" ? 1 : 0))) << stream;
  }
}

// A stream whose table cannot hold its rows (orders' fractional amounts in a BIGINT column) sends them to that
// table's rejects table, and the counts say which stream they were of: the run's event, SHOW STATS and no other stream.
TEST(FileStreams, EachStreamCountsItsOwnRejects) {
  PipelineFixture fixture(streams_config());
  write_stream_files(fixture.root(), 1, 50);
  const auto db = fixture.path("out.duckdb");
  duckdb_write(db, "CREATE TABLE raw_orders (id BIGINT, stream_no BIGINT, label VARCHAR, amount BIGINT)");
  auto run = fixture.skipprd({"sync", "--pipeline", "many", "--once", "--output", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json complete = sync_complete(run.out);
  EXPECT_EQ(complete["stream_rows_rejected"], (nlohmann::json{{"orders", 50}})) << run.out;
  EXPECT_EQ(complete["stream_rows_landed"]["users"], 50) << run.out;
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM raw_orders__skippr_rejected"), "50");
  const auto shown = show_stats(fixture);
  EXPECT_EQ(shown.at("rows_rejected"), "50");
  EXPECT_EQ(shown.at("rows_rejected[orders]"), "50");
  EXPECT_EQ(shown.count("rows_rejected[users]"), 0u);
}

TEST(FileStreams, EveryTableEqualsAnUnkilledRunUnderKill9AndLostDataDirs) {
  PipelineFixture unkilled(streams_config());
  PipelineFixture chaos(streams_config());
  const auto rows = write_stream_files(unkilled.root(), 8, 3000);
  write_stream_files(chaos.root(), 8, 3000);
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "150000"},
                                                  {"WAL_BYTES_PER_FILE", "400000"}};
  auto clean = unkilled.skipprd({"sync", "--pipeline", "many", "--once"}, env);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  auto chaos_env = env;
  chaos_env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.1";
  chaos_env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.8";
  const auto runs = sync_until_done_under_chaos(chaos, "many", chaos_env, /*seed_base=*/4300,
                                                {.max_runs = 300, .lose_data_dir_every = 4, .min_kills = 12});
  ASSERT_TRUE(runs.finished) << runs.failure;
  std::cout << "file streams chaos: " << runs.summary() << "\n";
  EXPECT_GE(runs.kills, 12);
  EXPECT_GE(runs.data_dirs_lost, 2);

  const auto want = digests(unkilled.path("out.duckdb"));
  const auto got = digests(chaos.path("out.duckdb"));
  for (const auto& stream : kStreams) {
    const std::string n = std::to_string(rows.at(stream));
    EXPECT_TRUE(want.at(stream).starts_with(n + "|" + n + "|")) << stream << ": " << want.at(stream);
    EXPECT_EQ(got.at(stream), want.at(stream)) << stream << " differs from the unkilled run (rows|ids|hash)";
  }
}

TEST(FileStreams, SetupMistakesStopBeforeAnythingIsRead) {
  {  // A table without {stream} would mix every stream in one table.
    PipelineFixture fixture(streams_config("events"));
    write_stream_files(fixture.root(), 1, 2);
    auto run = fixture.skipprd({"sync", "--pipeline", "many", "--once"});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("skippr.yml:"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("would put every stream of the source in one table"), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(fixture.path("out.duckdb")));
  }
  {  // {stream} in a table whose source has one stream.
    PipelineFixture fixture(
        jsonl_files_to_sink_config("in/*.jsonl", "DuckDB: { path: out.duckdb, table: \"t_{stream}\" }"));
    auto run = fixture.skipprd({"validate"});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("the pipeline's source names one stream"), std::string::npos) << run.err;
  }
  {  // {stream} that is not a folder of its own.
    PipelineFixture fixture(
        jsonl_files_to_sink_config("in/x{stream}/*.jsonl", "DuckDB: { path: out.duckdb, table: t }"));
    auto run = fixture.skipprd({"validate"});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("{stream} must be a whole folder name"), std::string::npos) << run.err;
  }
}

// Stdout puts every stream on one output: each line names its stream first, and each row is there once.
TEST(FileStreams, StdoutNamesEachLinesStream) {
  PipelineFixture fixture(R"(data_sources:
  files:
    File: { path: "in/{stream}/*.jsonl" }
data_sinks:
  out:
    Stdout: {}
pipelines:
  many:
    data_source: data_sources.files
    data_sink: data_sinks.out
)");
  const auto written = write_stream_files(fixture.root(), 2, 50);
  auto run = fixture.skipprd({"sync", "--pipeline", "many", "--once"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::string, std::set<int64_t>> ids;
  std::map<std::string, uint64_t> lines;
  std::istringstream out(run.out);
  for (std::string line; std::getline(out, line);) {
    ASSERT_TRUE(line.starts_with(R"({"_skippr_stream":")")) << line;
    const auto row = nlohmann::json::parse(line);
    const auto stream = row.at("_skippr_stream").get<std::string>();
    ++lines[stream];
    ids[stream].insert(row.at("id").get<int64_t>());
  }
  for (const auto& stream : kStreams) {
    EXPECT_EQ(lines[stream], written.at(stream)) << stream;
    EXPECT_EQ(ids[stream].size(), written.at(stream)) << stream;
  }
}

// Two folders whose tables would be one after folding (public.items and public_items): the run stops naming both,
// nothing of the second lands in the first's table, and the batch waits in the WAL until the config changes.
TEST(FileStreams, TwoStreamsThatWouldShareATableStopTheRunNamingBoth) {
  PipelineFixture fixture(streams_config());
  for (const std::string folder : {"public.items", "public_items"}) {
    std::filesystem::create_directories(fixture.path("in/" + folder));
    std::ofstream(fixture.path("in/" + folder + "/a.jsonl")) << R"({"id":1,"from":")" << folder << "\"}\n";
  }
  auto run = fixture.skipprd({"sync", "--pipeline", "many", "--once"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("streams 'public.items' and 'public_items' would both land in table raw_public_items"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(duckdb_value(fixture.path("out.duckdb"),
                         "SELECT count(*) FROM information_schema.tables WHERE "
                         "table_name = 'raw_public_items'"),
            "0")
      << "the transaction holding both streams must not have committed";
}

}  // namespace
}  // namespace skippr::test
