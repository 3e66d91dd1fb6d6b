// A new DATA_DIR must never make skipprd skip rows (issue 11). The batch ids of a new state cannot collide with
// those an earlier DATA_DIR left in the destination's ledger, the ledger answers per table, and a source that can
// seek resumes where the destination stands, so nothing is read twice either.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

// File in/*.jsonl -> DuckDB out.duckdb, table `table`, pipeline `orders`.
std::string files_to_duckdb(const std::string& table = "orders", const std::string& pipeline = "orders") {
  return fmt::format(R"(data_sources:
  inbox:
    File: {{ path: "in/*.jsonl" }}
data_sinks:
  warehouse:
    DuckDB: {{ path: out.duckdb, table: {0} }}
pipelines:
  {1}:
    data_source: data_sources.inbox
    data_sink: data_sinks.warehouse
)",
                     table, pipeline);
}

std::vector<std::string> sync(const std::string& pipeline = "orders") {
  return {"sync", "--pipeline", pipeline, "--once", "--output", "text", "--log", "info"};
}

std::string ids(const PipelineFixture& f, const std::string& table = "orders") {
  return duckdb_value(f.path("out.duckdb"),
                      fmt::format("SELECT string_agg(CAST(id AS VARCHAR), ',' ORDER BY id) FROM {}", table));
}

// The issue's reproduction: a second run from a subfolder used to start a new ./data there, and its first batch
// collided with the first batch in the ledger ("1 already applied", ids 3 and 4 never landed, exit 0).
TEST(FreshDataDir, ASyncFromASubfolderUsesTheStateBesideSkipprYml) {
  PipelineFixture f(files_to_duckdb());
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  // No DATA_DIR in the environment: the default "data" is relative to skippr.yml, wherever the command runs.
  auto first = run_process({SKIPPRD_BINARY, "sync", "--pipeline", "orders", "--once"}, f.root(),
                           {{"DATA_DIR", ""}, {"SKIPPR_CONFIG_FILE", ""}});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  write_text(f.path("in/c.jsonl"), "{\"id\":3}\n{\"id\":4}\n");
  std::filesystem::create_directories(f.path("sub"));
  auto second = run_process({SKIPPRD_BINARY, "sync", "--pipeline", "orders", "--once", "--log", "info"}, f.path("sub"),
                            {{"DATA_DIR", ""}, {"SKIPPR_CONFIG_FILE", ""}});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(ids(f), "1,2,3,4");
  EXPECT_FALSE(std::filesystem::exists(f.path("sub/data"))) << "a second state was made in the subfolder";
  EXPECT_TRUE(std::filesystem::exists(f.path("data/pipelines/orders/state.json")));
}

// State an earlier version left in the working folder's ./data (DATA_DIR used to be relative to it) is not silently
// replaced by a new one beside skippr.yml: the run stops with exit 2 and says where the state is.
TEST(FreshDataDir, StateLeftInTheWorkingFolderByTheOldRuleStopsTheRunAndIsNamed) {
  PipelineFixture f(files_to_duckdb());
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n");
  write_text(f.path("sub/data/pipelines/orders/state.json"), "{\"epoch\": 1, \"enabled\": true}\n");
  auto r = run_process({SKIPPRD_BINARY, "sync", "--pipeline", "orders", "--once"}, f.path("sub"),
                       {{"DATA_DIR", ""}, {"SKIPPR_CONFIG_FILE", ""}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("has its state in " + f.path("sub/data/pipelines/orders").string()), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(f.path("data")));
  EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
}

// The same with DATA_DIR really lost: the new state resumes the File source where the ledger says (files a and b
// done), so c lands and nothing lands twice.
TEST(FreshDataDir, ALostDataDirResumesTheFileSourceWhereTheDestinationStands) {
  PipelineFixture f(files_to_duckdb());
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  write_text(f.path("in/b.jsonl"), "{\"id\":5}\n");
  ASSERT_EQ(f.skipprd(sync()).exit_code, 0);
  EXPECT_EQ(ids(f), "1,2,5");
  const std::string first_lineage = duckdb_value(f.path("out.duckdb"), "SELECT min(lineage) FROM _skippr_batches");
  EXPECT_EQ(first_lineage.size(), 32u) << first_lineage;

  std::filesystem::remove_all(f.path("data"));
  write_text(f.path("in/c.jsonl"), "{\"id\":3}\n{\"id\":4}\n");
  auto r = f.skipprd(sync());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has no state in DATA_DIR"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the source resumes after that batch"), std::string::npos) << r.err;
  EXPECT_EQ(ids(f), "1,2,3,4,5");
  // The new state is a new lineage at a higher epoch (so merge order tokens stay newer than the old ones).
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(DISTINCT lineage) FROM _skippr_batches"), "2");
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT max(epoch) FROM _skippr_batches"), "2");
  // Every batch id says its lineage; the ledger's row counts add up to the table.
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"),
                         "SELECT count(*) FROM _skippr_batches WHERE batch_id NOT LIKE 'orders/' || lineage || '/%'"),
            "0");
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT sum(\"rows\") FROM _skippr_batches"), "5");
  auto show = f.skipprd({"query", "--sql", "SHOW PIPELINE orders"});
  EXPECT_NE(show.out.find("resumed_after"), std::string::npos) << show.out;

  // Killed between the decision and the first commit, or just run again: still nothing twice.
  ASSERT_EQ(f.skipprd(sync()).exit_code, 0);
  EXPECT_EQ(ids(f), "1,2,3,4,5");
}

// The issue's two-tables case: one ledger per DuckDB file served every table, so a batch of t_a made t_b skip.
TEST(FreshDataDir, TheLedgerAnswersPerTable) {
  PipelineFixture f(files_to_duckdb("t_a"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  ASSERT_EQ(f.skipprd(sync()).exit_code, 0);
  // The same pipeline, now pointed at another table, with its state lost: t_b holds nothing of it, so it gets all.
  write_text(f.path("skippr.yml"), files_to_duckdb("t_b"));
  std::filesystem::remove_all(f.path("data"));
  auto r = f.skipprd(sync());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ids(f, "t_a"), "1,2");
  EXPECT_EQ(ids(f, "t_b"), "1,2");
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"),
                         "SELECT string_agg(target_table, ',' ORDER BY target_table) FROM "
                         "_skippr_batches"),
            "t_a,t_b");
}

// Two pipelines, two tables, one file, each with a new DATA_DIR of its own: no batch of one answers for the other.
TEST(FreshDataDir, TwoPipelinesIntoTwoTablesOfOneFileBothLand) {
  PipelineFixture a(files_to_duckdb("t_a", "p_a"));
  write_text(a.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  ASSERT_EQ(a.skipprd(sync("p_a")).exit_code, 0);
  write_text(a.path("skippr.yml"), files_to_duckdb("t_b", "p_b"));
  auto r = a.skipprd(sync("p_b"), {{"DATA_DIR", a.path("other").string()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ids(a, "t_a"), "1,2");
  EXPECT_EQ(ids(a, "t_b"), "1,2");
}

// A ledger written before lineages existed (batch_id alone as the key, no positions) is migrated on open: its rows
// stay, a replay of an old id is still recognised, and new batches land beside them.
TEST(FreshDataDir, AFirstFormatLedgerIsMigratedAndKeepsAnsweringForOldIds) {
  PipelineFixture f(files_to_duckdb());
  {
    const std::string setup =
        "CREATE TABLE _skippr_batches (batch_id VARCHAR PRIMARY KEY, pipeline VARCHAR, epoch UBIGINT, seq UBIGINT, "
        "target_table VARCHAR, \"rows\" UBIGINT, landed_at TIMESTAMPTZ DEFAULT now());"
        "INSERT INTO _skippr_batches (batch_id, pipeline, epoch, seq, target_table, \"rows\") VALUES "
        "('orders/1/1', 'orders', 1, 1, 'Orders', 2), ('other/1/1', 'other', 1, 1, 'elsewhere', 7);"
        "CREATE TABLE orders (id BIGINT); INSERT INTO orders VALUES (1), (2);";
    duckdb_write(f.path("out.duckdb"), setup);
  }
  write_text(f.path("in/c.jsonl"), "{\"id\":3}\n");
  auto r = f.skipprd(sync());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No position in the old rows: the source is read from the start, said in one sentence.
  EXPECT_NE(r.err.find("without a source position"), std::string::npos) << r.err;
  EXPECT_EQ(ids(f), "1,2,3");
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) FROM _skippr_batches"), "3");
  EXPECT_EQ(
      duckdb_value(f.path("out.duckdb"), "SELECT target_table FROM _skippr_batches WHERE batch_id = 'orders/1/1'"),
      "orders");
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT max(epoch) FROM _skippr_batches WHERE pipeline = 'orders'"),
            "2");
}

}  // namespace
}  // namespace skippr::test
