// A replace_table sync that reads nothing no longer empties the table unless the pipeline says an empty source is
// expected (allow_empty_replace: true), and a File source whose folder does not exist is an error before anything is
// written: an unmounted share or a typo in the path must not wipe a table (issue 41). The summary says what a
// replacing run replaced.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::string config(const std::string& path, const std::string& landing, const std::string& extra = "") {
  return fmt::format(R"(data_sources:
  files:
    File: {{ path: "{}" }}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: customers }}
pipelines:
  p:
    data_source: data_sources.files
    data_sink: data_sinks.db
    landing: {}
{})",
                     path, landing, extra);
}

ProcessResult sync_once(const PipelineFixture& f) {
  return f.skipprd({"sync", "--pipeline", "p", "--once", "--output", "text"});
}

std::string ids(const PipelineFixture& f) {
  return duckdb_value(f.path("out.duckdb"), "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM customers");
}

TEST(EmptyReplace, AReplaceTableSyncThatReadsNothingRefusesAndLeavesTheTable) {
  PipelineFixture f(config("in/*.jsonl", "replace_table"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
  auto first = sync_once(f);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("replace_table: the table was replaced by 1 sync (3 rows landed with it in this run)"),
            std::string::npos)
      << first.out;
  EXPECT_EQ(ids(f), "1,2,3");

  // The share is unmounted (the folder is there, empty): the run refuses, says why and what to do, and commits
  // nothing; the table is untouched.
  std::filesystem::remove(f.path("in/a.jsonl"));
  auto empty = sync_once(f);
  EXPECT_EQ(empty.exit_code, 1) << empty.err;
  EXPECT_NE(empty.err.find("read no rows"), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find("allow_empty_replace: true"), std::string::npos) << empty.err;
  EXPECT_EQ(empty.out.find("committed p/"), std::string::npos) << empty.out;
  EXPECT_EQ(ids(f), "1,2,3");
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) FROM _skippr_batches"), "1");

  // The files are back: the next sync replaces the table as usual.
  write_text(f.path("in/b.jsonl"), "{\"id\":4}\n{\"id\":5}\n");
  auto back = sync_once(f);
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(ids(f), "4,5");
}

// Rows that all go to the dead letters are an empty read too: the table is not replaced by nothing.
TEST(EmptyReplace, ASyncWhoseEveryRecordIsADeadLetterRefusesToo) {
  PipelineFixture f(config("in/*.jsonl", "replace_table"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n");
  ASSERT_EQ(sync_once(f).exit_code, 0);
  write_text(f.path("in/a.jsonl"), "not json\n[1]\n");
  auto r = sync_once(f);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("allow_empty_replace"), std::string::npos) << r.err;
  EXPECT_EQ(ids(f), "1");
}

TEST(EmptyReplace, AllowEmptyReplaceEmptiesTheTableAndTheSummarySaysSo) {
  PipelineFixture f(config("in/*.jsonl", "replace_table", "    allow_empty_replace: true\n"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  ASSERT_EQ(sync_once(f).exit_code, 0);
  EXPECT_EQ(ids(f), "1,2");
  std::filesystem::remove(f.path("in/a.jsonl"));
  auto r = sync_once(f);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) FROM customers"), "0");
  EXPECT_NE(r.out.find("replace_table: the table was replaced by 1 sync (0 rows landed with it in this run)"),
            std::string::npos)
      << r.out;
  // The JSON summary says it as well.
  write_text(f.path("in/c.jsonl"), "{\"id\":7}\n");
  auto json = f.skipprd({"sync", "--pipeline", "p", "--once", "--output", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find(R"("replaced":{"landing":"replace_table","rows":1,"syncs":1})"), std::string::npos)
      << json.out;
}

// A File source path whose folder does not exist is a mistake (a typo, a share not mounted), for every landing: exit
// 2 naming the folder, before anything is read or written.
TEST(EmptyReplace, AFileSourceFolderThatDoesNotExistIsAnErrorBeforeAnythingIsWritten) {
  for (const std::string landing : {"replace_table", "append"}) {
    SCOPED_TRACE(landing);
    PipelineFixture f(config("inbox/*.jsonl", landing));
    write_text(f.path("in/a.jsonl"), "{\"id\":1}\n");
    auto r = sync_once(f);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("folder"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("inbox"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
    EXPECT_FALSE(std::filesystem::exists(f.path("data/pipelines/p/wal")));
  }
  // A table that exists is left as it is when the folder goes away later.
  PipelineFixture f(config("in/*.jsonl", "replace_table"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n");
  ASSERT_EQ(sync_once(f).exit_code, 0);
  std::filesystem::remove_all(f.path("in"));
  auto r = sync_once(f);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ids(f), "1");
}

// A running daemon refuses the same way: it stops at the empty sync (exit 1) instead of emptying the table.
TEST(EmptyReplace, ARunningSyncStopsAtAnEmptySyncWithoutEmptyingTheTable) {
  PipelineFixture f(config("in/*.jsonl", "replace_table"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  ASSERT_EQ(sync_once(f).exit_code, 0);
  std::filesystem::remove(f.path("in/a.jsonl"));
  auto r = f.skipprd({"sync", "--pipeline", "p", "--output", "text"}, {{"SYNC_FREQUENCY", "1"}}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("allow_empty_replace"), std::string::npos) << r.err;
  EXPECT_EQ(ids(f), "1,2");
}

}  // namespace
}  // namespace skippr::test
