#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace skippr {
namespace {

using skippr::testing::ScopedEnv;
using skippr::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kValid = R"(# a comment
data_sources:
  sample:
    Sample: { rows: 250 }
data_sinks:
  warehouse:
    DuckDB: { path: data/bikehire.duckdb, table: trips }
  console:
    Stdout:
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: merge_by_key
    primary_key: [trip_id]
  debug:
    data_source: sample
    data_sink: console
    chaos_mode: yes
    primary_key: trip_id
)";

// Loads `yaml` as skippr.yml and returns the error message (fails the test when it loads).
std::string load_error(const TempDir& dir, const std::string& yaml) {
  auto config = load_config(dir.write("skippr.yml", yaml));
  EXPECT_FALSE(config.has_value()) << "expected an error for:\n" << yaml;
  if (config) return "";
  EXPECT_EQ(config.error().kind, ErrorKind::kConfig);
  return config.error().message;
}

size_t line_count(const std::string& text) { return std::ranges::count(text, '\n') + (text.empty() ? 0 : 1); }

TEST(LoadConfig, ValidConfigAppliesDefaultsAndMakesPathsAbsolute) {
  TempDir dir;
  auto config = load_config(dir.write("skippr.yml", kValid));
  ASSERT_TRUE(config.has_value()) << config.error().message;

  EXPECT_EQ(config->file, dir.path() / "skippr.yml");
  ASSERT_EQ(config->sources.size(), 1u);
  const ConnectorConfig& sample = config->sources.at("sample");
  EXPECT_EQ(sample.type, "Sample");
  ASSERT_NE(sample.spec, nullptr);
  EXPECT_EQ(sample.params["rows"], 250);
  EXPECT_TRUE(sample.params["rows"].is_number_integer());
  EXPECT_EQ(sample.params["seed"], 1);                           // default
  EXPECT_EQ(sample.params["start_at"], "2024-01-01T00:00:00Z");  // default
  EXPECT_EQ(sample.where.line, 3);
  EXPECT_EQ(sample.where.column, 3);

  const ConnectorConfig& warehouse = config->sinks.at("warehouse");
  EXPECT_EQ(warehouse.params["path"], (dir.path() / "data/bikehire.duckdb").string());
  EXPECT_EQ(warehouse.params["table"], "trips");
  EXPECT_TRUE(config->sinks.at("console").params.is_object());
  EXPECT_TRUE(config->sinks.at("console").params.empty());

  const PipelineConfig& bikehire = config->pipelines.at("bikehire");
  EXPECT_EQ(bikehire.data_source, "sample");
  EXPECT_EQ(bikehire.data_sink, "warehouse");
  EXPECT_EQ(bikehire.landing, Landing::kMergeByKey);
  EXPECT_EQ(bikehire.primary_key, std::vector<std::string>{"trip_id"});
  EXPECT_FALSE(bikehire.chaos_mode);

  const PipelineConfig& debug = config->pipelines.at("debug");
  EXPECT_EQ(debug.data_source, "sample");  // bare names work too
  EXPECT_EQ(debug.data_sink, "console");
  EXPECT_EQ(debug.landing, Landing::kAppend);
  EXPECT_TRUE(debug.chaos_mode);
  EXPECT_EQ(debug.primary_key, std::vector<std::string>{"trip_id"});  // a single string is a one-key list

  EXPECT_EQ(config->raw_yaml, kValid);
}

TEST(LoadConfig, PipelineLookupNamesTheOnesThatExist) {
  TempDir dir;
  auto config = load_config(dir.write("skippr.yml", kValid));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  auto found = config->pipeline("debug");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ((*found)->data_sink, "console");

  auto missing = config->pipeline("nightly");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(missing.error().message, HasSubstr("pipeline 'nightly' is not in"));
  EXPECT_THAT(missing.error().message, HasSubstr("it has: bikehire, debug"));
}

TEST(LoadConfig, ExpandsVariablesAndDefaultsButKeepsTheRawText) {
  TempDir dir;
  ScopedEnv table("SKIPPR_TEST_TABLE", "rides");
  ScopedEnv rows("SKIPPR_TEST_ROWS", "42");
  ScopedEnv unset("SKIPPR_TEST_UNSET_DIR", std::nullopt);
  const std::string yaml = R"(data_sources:
  s:
    Sample: { rows: "${SKIPPR_TEST_ROWS}" }
data_sinks:
  w:
    DuckDB: { path: "${SKIPPR_TEST_UNSET_DIR:-out}/db.duckdb", table: "t_${SKIPPR_TEST_TABLE}_$$5" }
pipelines:
  p: { data_source: s, data_sink: w }
)";
  auto config = load_config(dir.write("skippr.yml", yaml));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->sources.at("s").params["rows"], 42);           // expanded before the int conversion
  EXPECT_EQ(config->sinks.at("w").params["table"], "t_rides_$5");  // $$ is a literal $
  EXPECT_EQ(config->sinks.at("w").params["path"], (dir.path() / "out/db.duckdb").string());
  EXPECT_THAT(config->raw_yaml, HasSubstr("${SKIPPR_TEST_TABLE}"));
}

TEST(LoadConfig, DotenvBesideTheFileIsUsedButDoesNotOverrideTheEnvironment) {
  TempDir dir;
  ScopedEnv from_file("SKIPPR_TEST_DOTENV_TABLE", std::nullopt);  // restores (unsets) what .env sets
  ScopedEnv already_set("SKIPPR_TEST_DOTENV_ROWS", "7");
  dir.write(".env",
            "# local settings\n"
            "export SKIPPR_TEST_DOTENV_TABLE='from_dotenv'\n"
            "SKIPPR_TEST_DOTENV_ROWS=999  # ignored: already set\n");
  auto config = load_config(dir.write("skippr.yml", R"(data_sources:
  s:
    Sample: { rows: "${SKIPPR_TEST_DOTENV_ROWS}" }
data_sinks:
  w:
    DuckDB: { path: db.duckdb, table: "${SKIPPR_TEST_DOTENV_TABLE}" }
)"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->sinks.at("w").params["table"], "from_dotenv");
  EXPECT_EQ(config->sources.at("s").params["rows"], 7);
}

TEST(LoadConfig, UnsetVariableIsAnErrorAtItsLine) {
  TempDir dir;
  ScopedEnv unset("SKIPPR_TEST_MISSING", std::nullopt);
  const std::string message = load_error(dir, R"(data_sinks:
  w:
    DuckDB:
      path: db.duckdb
      table: ${SKIPPR_TEST_MISSING}
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:5:14: data_sinks.w.DuckDB.table: environment variable "
                                 "'SKIPPR_TEST_MISSING' is not set"));
}

TEST(LoadConfig, UnknownKeySuggestsTheClosestOne) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sinks:
  warehouse:
    DuckDB:
      path: db.duckdb
      table: trips
      tabel: trips
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:6:7: data_sinks.warehouse.DuckDB: unknown key 'tabel'; did you mean "
                                 "'table'?"));
}

TEST(LoadConfig, MissingRequiredKey) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sinks:
  warehouse:
    DuckDB:
      table: trips
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:3:5: data_sinks.warehouse.DuckDB: missing required key 'path'"));
}

TEST(LoadConfig, WrongType) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sources:
  sample:
    Sample:
      rows: "many"
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:4:13: data_sources.sample.Sample.rows: must be an integer, got 'many'"));
}

TEST(LoadConfig, UnknownConnectorTypeListsTheKnownOnes) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sinks:
  warehouse:
    Duckdb: { path: db.duckdb, table: t }
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:3:5: data_sinks.warehouse: unknown sink type 'Duckdb'; did you mean "
                                 "'DuckDB'?; known sink types: AMQP, Athena, "));  // by name, as the registry
  EXPECT_THAT(message, HasSubstr("DuckDB, File,"));
  EXPECT_THAT(message, HasSubstr("Stdout"));  // every registered sink is listed, whatever this build has
}

TEST(LoadConfig, PipelineNamingAMissingSinkListsTheDefinedOnes) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sources:
  sample: { Sample: {} }
data_sinks:
  warehouse: { Stdout: {} }
  console: { Stdout: {} }
pipelines:
  p:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:9:16: pipelines.p.data_sink: 'lake' is not defined under data_sinks"));
  EXPECT_THAT(message, HasSubstr("it has: warehouse, console"));
}

TEST(LoadConfig, MergeByKeyNeedsAPrimaryKey) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sources: { s: { Sample: {} } }
data_sinks: { k: { Stdout: {} } }
pipelines:
  p:
    data_source: s
    data_sink: k
    landing: merge_by_key
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:7:14: pipelines.p.landing: merge_by_key needs"));
  EXPECT_THAT(message, HasSubstr("primary_key"));
}

TEST(LoadConfig, BadLandingListsTheAllowedValues) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sources: { s: { Sample: {} } }
data_sinks: { k: { Stdout: {} } }
pipelines:
  p:
    data_source: s
    data_sink: k
    landing: upsert
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:7:14: pipelines.p.landing: unknown landing 'upsert'"));
  EXPECT_THAT(message, HasSubstr("append, merge_by_key, replace_partition, replace_table"));
}

TEST(LoadConfig, MalformedYamlGivesTheLine) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sources:
  s:
    Sample: { rows: 1
data_sinks:
  k: { Stdout: {} }
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:4:"));
  EXPECT_THAT(message, HasSubstr("invalid YAML"));
}

TEST(LoadConfig, UnknownTopLevelKeyAndPipelineKey) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sources: { s: { Sample: {} } }
data_sinks: { k: { Stdout: {} } }
pipeline:
  p: { data_source: s, data_sink: k }
)");
  EXPECT_THAT(message, HasSubstr("skippr.yml:3:1: unknown top-level key 'pipeline'; did you mean 'pipelines'?"));
}

TEST(LoadConfig, ReportsEveryProblemAtOnceInFileOrder) {
  TempDir dir;
  const std::string message = load_error(dir, R"(data_sources:
  s:
    Sample: { rows: many, sed: 3 }
data_sinks:
  k:
    DuckDB: { table: trips }
pipelines:
  p:
    data_source: s
    data_sink: k
    chaos_mode: sometimes
    landing: merge_by_key
)");
  EXPECT_EQ(line_count(message), 5u) << message;
  EXPECT_THAT(message, HasSubstr("skippr.yml:3:21: data_sources.s.Sample.rows: must be an integer"));
  EXPECT_THAT(message, HasSubstr("skippr.yml:3:27: data_sources.s.Sample: unknown key 'sed'; did you mean 'seed'?"));
  EXPECT_THAT(message, HasSubstr("skippr.yml:6:5: data_sinks.k.DuckDB: missing required key 'path'"));
  EXPECT_THAT(message, HasSubstr("skippr.yml:11:17: pipelines.p.chaos_mode: must be true or false"));
  EXPECT_THAT(message, HasSubstr("skippr.yml:12:14: pipelines.p.landing: merge_by_key needs"));
  // A pipeline naming a connector that is merely broken is not also reported as naming a missing one.
  EXPECT_THAT(message, Not(HasSubstr("not defined")));
  EXPECT_LT(message.find(":3:21:"), message.find(":6:5:"));
}

TEST(LoadConfig, MissingFileIsAConfigError) {
  TempDir dir;
  auto config = load_config(dir.path() / "nope.yml");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(config.error().message, HasSubstr("nope.yml"));
}

}  // namespace
}  // namespace skippr
