// MotherDuck through the real binary. The service and its extension cannot be reached here (DuckDB extensions are
// not downloadable in CI), so what runs is what a user meets first: the configuration, the missing-extension error
// at start-up (exit 2, before anything is read), and the token kept out of every message and file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr const char* kToken = "md-token-d41d8cd98f00b204e9800998ecf8427e";

std::string motherduck_config(const std::string& database, const std::string& extension_directory) {
  return sample_to_sink_config(
      fmt::format(
          R"(MotherDuck: {{ database: "{}", token: "${{MD_TOKEN}}", table: trips, extension_directory: "{}" }})",
          database, extension_directory),
      1000);
}

TEST(MotherDuck, AMissingExtensionStopsTheRunAtStartUpWithoutTheToken) {
  TempDir extensions;
  PipelineFixture f(motherduck_config("analytics", extensions.path().string()));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"MD_TOKEN", kToken}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("MotherDuck needs DuckDB's motherduck extension"), std::string::npos) << r.err;
  // DuckDB's own account of where it looked: under the configured directory.
  EXPECT_NE(r.err.find(extensions.path().string() + "/v"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("skipprd never downloads extensions"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find(kToken), std::string::npos);
  EXPECT_EQ(r.err.find(kToken), std::string::npos);
  EXPECT_TRUE(files_containing(f.root(), kToken).empty());
  // Nothing was read nor committed.
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(f.path("data/pipelines/bikehire/wal"), ec));
}

TEST(MotherDuck, TheDatabaseIsANameAndTheTokenIsRequired) {
  TempDir extensions;
  PipelineFixture with_prefix(motherduck_config("md:analytics", extensions.path().string()));
  auto r = with_prefix.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"MD_TOKEN", kToken}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("must be a MotherDuck database name"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(kToken), std::string::npos);

  PipelineFixture without_token(sample_to_sink_config("MotherDuck: { database: analytics, table: trips }", 1000));
  r = without_token.skipprd({"validate"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("token"), std::string::npos) << r.err;
}

// MotherDuck is the DuckDB sink on md:, so it lands streams as DuckDB does (tested there, in the sink suite). What
// runs here is the table check, made before the missing extension is reported.
TEST(MotherDuck, LandsEachStreamInATableOfItsOwn) {
  TempDir extensions;
  const auto config = [&](const std::string& table) {
    return fmt::format(R"(
data_sources:
  folders:
    File: {{ path: "in/{{stream}}/*.jsonl" }}
data_sinks:
  md:
    MotherDuck: {{ database: analytics, token: "${{MD_TOKEN}}", {}extension_directory: "{}" }}
pipelines:
  shop:
    data_source: data_sources.folders
    data_sink: data_sinks.md
)",
                       table, extensions.path().string());
  };
  // A table with {stream}, or none: accepted, and the run goes on to the extension, which is missing here.
  for (const std::string table : {"table: \"raw_{stream}\", ", ""}) {
    PipelineFixture accepted(config(table));
    auto r = accepted.skipprd({"validate"}, {{"MD_TOKEN", kToken}});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("MotherDuck needs DuckDB's motherduck extension"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("{stream}"), std::string::npos) << r.err;
  }
  PipelineFixture one_table(config("table: trips, "));
  auto r = one_table.skipprd({"validate"}, {{"MD_TOKEN", kToken}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("{stream}"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("extension"), std::string::npos) << r.err;
}

TEST(MotherDuck, IsListedWithItsParameters) {
  PipelineFixture f(sample_to_duckdb_config(10));
  auto r = f.skipprd({"connectors"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.find("MotherDuck");
  ASSERT_NE(at, std::string::npos) << r.out;
  for (const char* param : {"database", "token", "table", "extension_directory"}) {
    EXPECT_NE(r.out.find(param, at), std::string::npos) << param << "\n" << r.out;
  }
}

}  // namespace
}  // namespace skippr::test
