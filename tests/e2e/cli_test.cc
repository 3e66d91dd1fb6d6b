// The CLI's contract for mistakes: exit 2 with file:line, nothing read or written; and its informational commands.
#include <gtest/gtest.h>

#include <map>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

struct BadConfig {
  const char* name;
  const char* yaml;
  const char* expected_location;  // "skippr.yml:<line>:"
  const char* expected_words;
};

const BadConfig kBadConfigs[] = {
    {"unknown key",
     "data_sources:\n  sample:\n    Sample: { rows: 10 }\ndata_sinks:\n  warehouse:\n    DuckDB:\n      path: "
     "o.duckdb\n"
     "      tabel: trips\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.warehouse\n",
     "skippr.yml:8:", "tabel"},
    {"missing required key",
     "data_sources:\n  sample:\n    Sample: { rows: 10 }\ndata_sinks:\n  warehouse:\n    DuckDB: { table: trips }\n"
     "pipelines:\n  bikehire:\n    data_source: data_sources.sample\n    data_sink: data_sinks.warehouse\n",
     "skippr.yml:6:", "missing required key 'path'"},
    // A table is only optional (it defaults to {stream}) when the source names several streams.
    {"missing table for one stream",
     "data_sources:\n  sample:\n    Sample: { rows: 10 }\ndata_sinks:\n  warehouse:\n    DuckDB: { path: o.duckdb }\n"
     "pipelines:\n  bikehire:\n    data_source: data_sources.sample\n    data_sink: data_sinks.warehouse\n",
     "skippr.yml:5:", "sink 'warehouse': table is missing; name the table to land in"},
    {"wrong type",
     "data_sources:\n  sample:\n    Sample: { rows: lots }\ndata_sinks:\n  warehouse:\n"
     "    DuckDB: { path: o.duckdb, table: t }\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.warehouse\n",
     "skippr.yml:3:", "rows"},
    {"pipeline naming a missing sink",
     "data_sources:\n  sample:\n    Sample: { rows: 10 }\ndata_sinks:\n  warehouse:\n"
     "    DuckDB: { path: o.duckdb, table: t }\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.lake\n",
     "skippr.yml:10:", "lake"},
    {"unknown connector type",
     "data_sources:\n  sample:\n    Sampel: { rows: 10 }\ndata_sinks:\n  warehouse:\n"
     "    DuckDB: { path: o.duckdb, table: t }\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.warehouse\n",
     "skippr.yml:3:", "Sampel"},
    // What a connector's own checks refuse is caught at load time too, with the connector's line (issue 11).
    {"negative row count",
     "data_sources:\n  sample:\n    Sample: { rows: -5 }\ndata_sinks:\n  warehouse:\n"
     "    DuckDB: { path: o.duckdb, table: t }\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.warehouse\n",
     "skippr.yml:2:", "rows must be >= 0"},
    {"empty table",
     "data_sources:\n  sample:\n    Sample: { rows: 5 }\ndata_sinks:\n  warehouse:\n"
     "    DuckDB: { path: o.duckdb, table: \"\" }\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.warehouse\n",
     "skippr.yml:5:", "sink 'warehouse': table is empty; name the table to land in"},
    {"landing the sink lacks",
     "data_sources:\n  sample:\n    Sample: { rows: 5 }\ndata_sinks:\n  warehouse:\n"
     "    File: { path: out }\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.warehouse\n    landing: replace_table\n",
     "skippr.yml:5:", "replace_table is not supported by File"},
    {"unauthenticated HttpServer on a non-loopback address",
     "data_sources:\n  events:\n    HttpServer: { listen_address: \"0.0.0.0:18080\" }\ndata_sinks:\n  warehouse:\n"
     "    DuckDB: { path: o.duckdb, table: t }\npipelines:\n  bikehire:\n    data_source: data_sources.events\n"
     "    data_sink: data_sinks.warehouse\n",
     "skippr.yml:2:", "allow_unauthenticated: true"},
    {"pipeline name that leaves DATA_DIR",
     "data_sources:\n  sample:\n    Sample: { rows: 5 }\ndata_sinks:\n  warehouse:\n"
     "    DuckDB: { path: o.duckdb, table: t }\npipelines:\n  ../../bikehire:\n    data_source: data_sources.sample\n"
     "    data_sink: data_sinks.warehouse\n",
     "skippr.yml:8:", "a pipeline name may hold only"},
    {"malformed yaml", "data_sources:\n  sample:\n    Sample: { rows: 10\ndata_sinks:\n", "skippr.yml:", "skippr.yml"},
};

class BadConfigTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigTest, Exits2WithFileAndLineAndWritesNothing) {
  const BadConfig& c = GetParam();
  PipelineFixture f(c.yaml);
  for (const auto& command :
       {std::vector<std::string>{"validate"}, std::vector<std::string>{"sync", "--pipeline", "bikehire", "--once"}}) {
    auto r = f.skipprd(command);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected_location), std::string::npos) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected_words), std::string::npos) << c.name << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(f.path("data"))) << "nothing may be written on a config error";
  EXPECT_FALSE(std::filesystem::exists(f.path("o.duckdb")));
}

INSTANTIATE_TEST_SUITE_P(Cli, BadConfigTest, ::testing::ValuesIn(kBadConfigs), [](const auto& info) {
  std::string n = info.param.name;
  for (auto& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n;
});

TEST(Cli, UnknownPipelineExits2ListingTheKnownOnes) {
  PipelineFixture f(sample_to_duckdb_config(10));
  auto r = f.skipprd({"sync", "--pipeline", "bikehyre", "--once"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bikehire"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(f.path("data")));
}

// An exception escaping one of a run's threads (injected in the source's poll) ends the run with exit 1 and a
// sentence, not with std::terminate (exit 134); a run without the fault then lands everything.
TEST(Cli, AnExceptionInARunsThreadIsExitOneWithAMessage) {
  PipelineFixture fx(sample_to_duckdb_config(1000));
  auto r = fx.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SKIPPR_TEST_THROW_IN_POLL", "bikehire"}}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("unexpected failure in the reader: injected fault: the source's poll threw"), std::string::npos)
      << r.err;
  r = fx.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trips_digest(fx.path("out.duckdb")).rows, 1000u);
}

// A DuckDB file in a folder that cannot be made (under /proc, even for root) is exit 2 saying why, and does not ask
// to "run again once it is reachable" (waiting cannot fix it).
TEST(Cli, ADuckDbFolderThatCannotBeMadeIsExitTwoWithoutRunAgain) {
  PipelineFixture fx(
      "data_sources:\n  s:\n    Sample: { rows: 10 }\ndata_sinks:\n  d:\n    DuckDB: { path: /proc/no-such/out.duckdb, "
      "table: t }\npipelines:\n  p:\n    data_source: data_sources.s\n    data_sink: data_sinks.d\n");
  auto r = fx.skipprd({"sync", "--pipeline", "p", "--once"}, {}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot create the folder of the DuckDB database /proc/no-such/out.duckdb"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("run again"), std::string::npos) << r.err;
}

// A run whose only row went to the rejects table says so in its summary; before, it read "0 landed ... exit 0".
TEST(Cli, TheSummaryCountsRejectedRows) {
  PipelineFixture fx(
      "data_sources:\n  in:\n    File: { path: \"in/*.jsonl\" }\ndata_sinks:\n  d:\n    DuckDB: { path: out.duckdb, "
      "table: t }\npipelines:\n  p:\n    data_source: data_sources.in\n    data_sink: data_sinks.d\n");
  duckdb_write(fx.path("out.duckdb"), "CREATE TABLE t (id BIGINT, code BIGINT)");
  write_text(fx.path("in/a.jsonl"), "{\"id\": 1, \"code\": \"not a number\"}\n");
  auto r = fx.skipprd({"sync", "--pipeline", "p", "--once", "--output", "text"}, {}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 committed, 0 landed and 1 rejected (in the rejects table, with their reason)"),
            std::string::npos)
      << r.out;
}

// What landed in a DuckDB destination can be looked at without a DuckDB CLI: the sync says how, and a SELECT runs
// on the file, read-only; with two DuckDB pipelines, --pipeline picks one.
TEST(Cli, ASelectReadsThePipelinesDuckDbDestinationReadOnly) {
  PipelineFixture fx(sample_to_duckdb_config(1000));
  auto r = fx.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "text"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("look at the rows: skipprd query --sql \"SELECT * FROM trips LIMIT 10\""), std::string::npos)
      << r.err;
  r = fx.skipprd({"query", "--sql", "select count(*) AS n, count(DISTINCT trip_id) AS ids FROM trips"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1000  1000"), std::string::npos) << r.out;
  r = fx.skipprd({"query", "--sql", "WITH x AS (SELECT 1) SELECT count(*) FROM trips; DELETE FROM trips"});
  EXPECT_NE(r.exit_code, 0) << "a statement that writes ran: " << r.out;
  EXPECT_EQ(trips_digest(fx.path("out.duckdb")).rows, 1000u);

  // A second pipeline, into another DuckDB file.
  const std::string config = read_text(fx.path("skippr.yml"));
  write_text(fx.path("skippr.yml"),
             std::string(config).insert(config.find("pipelines:"),
                                        "  other:\n    DuckDB: { path: other.duckdb, table: t }\n") +
                 "  copy:\n    data_source: data_sources.sample\n    data_sink: data_sinks.other\n");
  r = fx.skipprd({"query", "--sql", "SELECT count(*) FROM trips"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("2 pipelines land in DuckDB files; name one with --pipeline (bikehire, copy)"),
            std::string::npos)
      << r.err;
  r = fx.skipprd({"query", "--pipeline", "copy", "--sql", "SELECT 1"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("pipeline 'copy' has landed nothing yet"), std::string::npos) << r.err;
  r = fx.skipprd({"query", "--pipeline", "bikehire", "--sql", "SELECT count(*) FROM trips"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(Cli, UsageErrorsExit2) {
  PipelineFixture f(sample_to_duckdb_config(10));
  EXPECT_EQ(f.skipprd({"sync"}).exit_code, 2);  // --pipeline is required
  EXPECT_EQ(f.skipprd({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--output", "xml"}).exit_code, 2);
}

TEST(Cli, ValidateVersionConnectorsAndHelp) {
  PipelineFixture f(sample_to_duckdb_config(10));
  auto v = f.skipprd({"validate"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("is valid"), std::string::npos);
  auto version = f.skipprd({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("skipprd "), std::string::npos);
  auto connectors = f.skipprd({"connectors"});
  EXPECT_EQ(connectors.exit_code, 0);
  EXPECT_NE(connectors.out.find("DuckDB"), std::string::npos);
  EXPECT_NE(connectors.out.find("exactly once"), std::string::npos);
  EXPECT_NE(connectors.out.find("Stdout"), std::string::npos);
  auto help = f.skipprd({"help", "sync"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--once"), std::string::npos);
  // `help` alone: the program's commands, not the help of `help`.
  auto commands = f.skipprd({"help"});
  EXPECT_EQ(commands.exit_code, 0);
  for (const char* command : {"sync", "serve", "query", "validate", "connectors", "promote"}) {
    EXPECT_NE(commands.out.find(command), std::string::npos) << command << " is missing from:\n" << commands.out;
  }
}

TEST(Cli, EnvFileAndVariablesFeedTheConfig) {
  PipelineFixture f(
      "data_sources:\n  sample:\n    Sample:\n      rows: ${ROWS}\n      seed: ${SEED:-3}\ndata_sinks:\n  warehouse:\n"
      "    DuckDB: { path: out.duckdb, table: trips }\npipelines:\n  bikehire:\n    data_source: data_sources.sample\n"
      "    data_sink: data_sinks.warehouse\n");
  write_text(f.path(".env"), "ROWS=1234\n");
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trips_digest(f.path("out.duckdb")).rows, 1234u);
}

TEST(Cli, StdoutSinkPrintsJsonLines) {
  PipelineFixture f(
      "data_sources:\n  sample:\n    Sample: { rows: 3 }\ndata_sinks:\n  console:\n    Stdout: {}\n"
      "pipelines:\n  peek:\n    data_source: data_sources.sample\n    data_sink: data_sinks.console\n");
  auto r = f.skipprd({"sync", "--pipeline", "peek", "--once", "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"trip_id\":3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sync_complete"), std::string::npos) << "events must not mix into the sink's stdout";
  EXPECT_NE(r.err.find("sync_complete"), std::string::npos) << r.err;
}

// Small things of the CLI's contract (issue 11, item 7).
TEST(Cli, ABadLogLevelAnUnknownCommandAndABadPipelineNameAreUsageErrors) {
  PipelineFixture f(sample_to_duckdb_config(10));
  auto bogus = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "bogus"});
  EXPECT_EQ(bogus.exit_code, 2) << bogus.err;
  auto unknown = f.skipprd({"synk"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("the commands are: sync, serve, query"), std::string::npos) << unknown.err;
  auto none = f.skipprd({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("the commands are"), std::string::npos) << none.err;
  auto reset = f.skipprd({"query", "--sql", "RESET PIPELINE ../../etc"});
  EXPECT_EQ(reset.exit_code, 2);
  EXPECT_NE(reset.err.find("is not a pipeline name"), std::string::npos) << reset.err;
  auto inspect = f.skipprd({"wal", "inspect", "--pipeline", ".."});
  EXPECT_EQ(inspect.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(f.path("data")));
}

TEST(Cli, AnErrorIsPrintedOnce) {
  PipelineFixture f(sample_to_duckdb_config(10));
  ASSERT_EQ(f.skipprd({"query", "--sql", "DISABLE PIPELINE bikehire"}).exit_code, 0);
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "text"});
  EXPECT_EQ(r.exit_code, 2);
  const std::string all = r.out + r.err;
  size_t count = 0;
  for (size_t at = all.find("is disabled"); at != std::string::npos; at = all.find("is disabled", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << all;
}

// Clustered mode refuses a sink whose retries can repeat rows, from the guarantee the sink declares, before anything
// is opened (the URLs point nowhere); an exactly-once sink passes that check and meets the next one (no SKIPPR_PEERS).
TEST(Cli, ClusteredModeRefusesSinksWhoseRetriesCanRepeatRows) {
  const std::map<std::string, std::string> clustered = {{"WAL_STORAGE", "clustered"}};
  const std::pair<const char*, const char*> refused[] = {
      {"ClickHouse: { url: \"http://127.0.0.1:9\", database: d, table: t }", "at least once on retry"},
      {"AMQP: { url: \"amqp://guest:guest@127.0.0.1:9/\", routing_key: q }", "at least once on retry"},
      {"Stdout: {}", "none on retry"},
  };
  for (const auto& [sink, words] : refused) {
    PipelineFixture f(sample_to_sink_config(sink, 10));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, clustered);
    EXPECT_EQ(r.exit_code, 2) << sink << ": " << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("accepts only sinks whose retries cannot repeat rows"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("skippr.yml:"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("guest:guest"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(f.path("data")));
  }
  PipelineFixture duck(sample_to_duckdb_config(10));
  auto r = duck.skipprd({"sync", "--pipeline", "bikehire", "--once"}, clustered);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("WAL_STORAGE=clustered needs SKIPPR_PEERS"), std::string::npos) << r.err;
}

TEST(Cli, DataDirIsPrivateToItsUser) {
  PipelineFixture f(sample_to_duckdb_config(100));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  namespace fs = std::filesystem;
  for (const auto& entry : fs::recursive_directory_iterator(f.path("data"))) {
    const auto perms = entry.status().permissions();
    const bool others = (perms & (fs::perms::group_all | fs::perms::others_all)) != fs::perms::none;
    EXPECT_FALSE(others) << entry.path() << " is readable by others";
  }
  EXPECT_EQ(fs::status(f.path("data")).permissions() & fs::perms::all, fs::perms::owner_all);
}

}  // namespace
}  // namespace skippr::test
