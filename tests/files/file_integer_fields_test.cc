// The File source takes, into a field it learned as an integer, what docs/guide/bad-data.md says integer columns
// take: whole decimal strings ("1"), integral doubles (2.0) and booleans (0/1). Other values of another type stay
// dead letters (issue 41).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::vector<nlohmann::json> dead_letters(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(FileIntegerFields, WholeDecimalStringsAndIntegralDoublesLandAsIntegers) {
  PipelineFixture f(jsonl_files_to_sink_config("in/*.jsonl", "DuckDB: { path: out.duckdb, table: t }"));
  write_text(f.path("in/a.jsonl"),
             "{\"id\":1,\"n\":10}\n"
             "{\"id\":2,\"n\":\"1\"}\n"
             "{\"id\":3,\"n\":2.0}\n"
             "{\"id\":4,\"n\":\"-7\"}\n"
             "{\"id\":5,\"n\":-3e2}\n"
             "{\"id\":11,\"n\":true}\n"
             // These do not fit an integer without loss: still dead letters, with their reason.
             "{\"id\":6,\"n\":2.5}\n"
             "{\"id\":7,\"n\":\"1.0\"}\n"
             "{\"id\":8,\"n\":\" 1\"}\n"
             "{\"id\":9,\"n\":\"x\"}\n"
             "{\"id\":10,\"n\":1e300}\n");
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "warn"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto db = f.path("out.duckdb");
  EXPECT_EQ(duckdb_value(db,
                         "SELECT data_type FROM information_schema.columns WHERE table_name = 't' AND "
                         "column_name = 'n'"),
            "BIGINT");
  EXPECT_EQ(duckdb_value(db, "SELECT string_agg(id || ':' || n, ',' ORDER BY id) FROM t"),
            "1:10,2:1,3:2,4:-7,5:-300,11:1");
  const auto dead = dead_letters(f.path("data/pipelines/bikehire/deadletter.jsonl"));
  ASSERT_EQ(dead.size(), 5u);
  for (size_t i = 0; i < dead.size(); ++i) {
    EXPECT_EQ(dead[i].at("line").get<uint64_t>(), 7 + i);
    EXPECT_NE(dead[i].at("reason").get<std::string>().find("field 'n'"), std::string::npos) << dead[i].dump();
  }
}

// A field learned as a double takes numeric strings too (docs/guide/bad-data.md's rule for double columns).
TEST(FileIntegerFields, NumericStringsLandInADoubleField) {
  PipelineFixture f(jsonl_files_to_sink_config("in/*.jsonl", "DuckDB: { path: out.duckdb, table: t }"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1,\"x\":0.5}\n{\"id\":2,\"x\":\"2.25\"}\n{\"id\":3,\"x\":\"abc\"}\n");
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "warn"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT string_agg(id || ':' || x, ',' ORDER BY id) FROM t"),
            "1:0.5,2:2.25");
  EXPECT_EQ(dead_letters(f.path("data/pipelines/bikehire/deadletter.jsonl")).size(), 1u);
}

}  // namespace
}  // namespace skippr::test
