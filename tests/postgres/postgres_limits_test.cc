// Postgres limits the data can exceed: a row of more than 1,600 fields (Postgres' column limit) is a permanent
// error, exit 1 saying what to change, not "retry later" (75), which systemd and serve retry forever.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"
#include "support/postgres_server.h"

namespace skippr::test {
namespace {

TEST(PostgresLimits, ARowWiderThanPostgresColumnLimitExits1SayingWhatToChange) {
  auto& pg = SharedPostgres();
  const std::string db = pg.create_database("toowide");
  PipelineFixture f(fmt::format(R"(data_sources:
  files:
    File: {{ path: in/*.jsonl, format: jsonl }}
data_sinks:
  db:
{}pipelines:
  p:
    data_source: data_sources.files
    data_sink: data_sinks.db
)",
                                postgres_sink_yaml("public", "wide")));
  std::string row = "{\"id\":1";
  for (int i = 0; i < 1700; ++i) row += fmt::format(",\"f{}\":{}", i, i);
  write_text(f.path("in/a.jsonl"), row + "}\n");
  auto env = postgres_env(pg, db);
  env["SINK_RETRY_SECONDS"] = "2";
  auto run = f.skipprd({"sync", "--pipeline", "p", "--once", "--output", "text"}, env);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("1701 fields, and a Postgres table holds at most 1,600 columns"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("leave fields out at the source"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("1 committed batch (1 rows) wait in the WAL"), std::string::npos) << run.err;
  EXPECT_EQ(pg.query(db, "SELECT count(*) FROM pg_tables WHERE tablename = 'wide'").at(0).at(0).value_or(""), "0");
}

}  // namespace
}  // namespace skippr::test
