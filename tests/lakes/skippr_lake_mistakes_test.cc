// SkipprLake on what a week of real JSON produces, through the real binary: rows without the partition field,
// timestamps that arrive as ISO-8601 text, values too long for a folder name all land (exit 0); what no rerun can fix
// (a field whose type changed, partition_by naming a field of the wrong type) stops with exit 1 or 2 saying what to
// change, not with "retry later" (75), which systemd and serve retry forever.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

#include "support/duckdb_probe.h"
#include "support/iceberg_reader.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

// JSON lines in `in/` into table `t` of a SkipprLake in `lake` (default: `lake/` beside the config), pipeline
// `pipeline`, with `more` in the sink's flow map.
std::string lake_config(const PipelineFixture& f, const std::string& more, std::filesystem::path lake = {},
                        const std::string& pipeline = "p") {
  if (lake.empty()) lake = f.path("lake");
  return jsonl_files_to_sink_config(f.path("in").string() + "/*.jsonl",
                                    fmt::format("SkipprLake: {{ path: \"{}\", table: t{} }}", lake.string(), more),
                                    pipeline);
}

// Small batches, each landed on its own snapshot: where a batch is cut decides what it holds.
ProcessResult sync_once(const PipelineFixture& f, const std::string& pipeline = "p") {
  return f.skipprd({"sync", "--pipeline", pipeline, "--once", "--output", "text"},
                   {{"BUFFER_THRESHOLD_BYTES", "2000"}, {"LANDING_GROUP_BATCHES", "1"}, {"SINK_RETRY_SECONDS", "3"}});
}

std::string lines(int from, int count, const std::function<std::string(int)>& row) {
  std::string text;
  for (int i = from; i < from + count; ++i) text += row(i) + "\n";
  return text;
}

// The partition folders under the table's data/, as "a=x/b=y".
std::set<std::string> partition_folders(const std::filesystem::path& table) {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(table / "data")) {
    if (entry.is_regular_file()) out.insert(entry.path().parent_path().lexically_relative(table / "data").string());
  }
  return out;
}

std::string data_files(const std::filesystem::path& table) { return (table / "data" / "**" / "*.parquet").string(); }

TEST(SkipprLakeInput, RowsWithoutThePartitionFieldAndTimestampsAsTextLandWhereverBatchesAreCut) {
  PipelineFixture f("");
  write_text(f.path("skippr.yml"), lake_config(f, ", partition_by: [\"day(ts)\", kind]"));
  // First whole batches without ts or kind, then ISO-8601 text (JSON has no timestamps), then text that is none.
  std::string text = lines(0, 200, [](int i) { return fmt::format(R"({{"id":{},"v":"none {}"}})", i, i); });
  text += lines(200, 200, [](int i) {
    return fmt::format(R"({{"id":{},"ts":"2026-11-0{}T{:02}:15:00Z","kind":"a"}})", i, 1 + i % 2, i % 24);
  });
  text += lines(400, 3, [](int i) { return fmt::format(R"({{"id":{},"ts":"soon","kind":"b"}})", i); });
  write_text(f.path("in/a.jsonl"), text);
  auto run = sync_once(f);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("403 landed"), std::string::npos) << run.out;

  const auto table = f.path("lake/t");
  const IcebergDigest read = icebird_digest({"file://" + table.string()}, "id");
  ASSERT_TRUE(read.error.empty()) << read.error;
  EXPECT_EQ(read.rows, 403u);
  EXPECT_EQ(read.distinct_keys, 403u);
  EXPECT_EQ(partition_folders(table), (std::set<std::string>{"ts_day=null/kind=null", "ts_day=null/kind=b",
                                                             "ts_day=2026-11-01/kind=a", "ts_day=2026-11-02/kind=a"}));
  const auto metadata = iceberg_current_metadata(table);
  std::map<std::string, std::string> types;
  for (const auto& field : metadata["schemas"].back()["fields"]) types[field["name"]] = field["type"];
  EXPECT_EQ(types["ts"], "timestamptz");
  EXPECT_EQ(types["ts__skippr_unparsed"], "string");
  // Every value is kept: the parsed instants, and the text that was not one beside its NULL.
  EXPECT_EQ(
      duckdb_memory_value(fmt::format(
          "SELECT count(*) FILTER (WHERE ts IS NULL AND kind IS NULL) || ' ' || "
          "count(*) FILTER (WHERE ts__skippr_unparsed = 'soon' AND ts IS NULL) || "
          "' ' || epoch(max(ts))::BIGINT FROM read_parquet('{}', union_by_name = true, hive_partitioning = false)",
          data_files(table))),
      "200 3 1793661300");
}

TEST(SkipprLakeInput, APartitionValueTooLongForAFolderNameLandsUnderAShortenedFolder) {
  PipelineFixture f("");
  write_text(f.path("skippr.yml"), lake_config(f, ", partition_by: [k]"));
  const std::string long_a(400, 'a');
  const std::string long_b = long_a + "b";
  write_text(f.path("in/a.jsonl"), fmt::format(R"({{"id":1,"k":"{}"}})"
                                               "\n"
                                               R"({{"id":2,"k":"{}"}})"
                                               "\n"
                                               R"({{"id":3,"k":"short"}})"
                                               "\n",
                                               long_a, long_b));
  auto run = sync_once(f);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto table = f.path("lake/t");
  const auto folders = partition_folders(table);
  EXPECT_EQ(folders.size(), 3u);
  for (const auto& folder : folders) EXPECT_LE(folder.size(), 110u) << folder;
  EXPECT_TRUE(folders.contains("k=short"));
  // Readers take the value from the manifests, whole.
  EXPECT_EQ(duckdb_memory_value(fmt::format("SELECT string_agg(length(k)::VARCHAR, ' ' ORDER BY id) FROM "
                                            "read_parquet('{}', hive_partitioning = false)",
                                            data_files(table))),
            "400 401 5");
  EXPECT_EQ(icebird_digest({"file://" + table.string()}, "id").rows, 3u);
}

TEST(SkipprLakeInput, WhatNoRerunCanFixExits1Or2SayingWhatToChange) {
  {
    // A field whose type changed: another pipeline (the File source keeps a field's first type) brings n as text
    // into the same table. Exit 1, naming the field, both types and what to do; nothing is lost.
    PipelineFixture first("");
    write_text(first.path("skippr.yml"), lake_config(first, ""));
    write_text(first.path("in/a.jsonl"), "{\"id\":1,\"n\":5}\n");
    ASSERT_EQ(sync_once(first).exit_code, 0);
    // A row the source dead-letters (text for its integer field) leaves a batch of no rows: it lands all the same.
    write_text(first.path("in/b.jsonl"), "{\"id\":2,\"n\":\"five\"}\n");
    auto dead_lettered = sync_once(first);
    ASSERT_EQ(dead_lettered.exit_code, 0) << dead_lettered.err;

    PipelineFixture second("");
    write_text(second.path("skippr.yml"), lake_config(second, "", first.path("lake"), "other"));
    write_text(second.path("in/a.jsonl"), "{\"id\":3,\"n\":\"five\"}\n");
    auto run = sync_once(second, "other");
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_NE(run.err.find("field 'n' is long in the table and string in this batch"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("Point the sink at a new table"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("wait in the WAL"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("Nothing is lost"), std::string::npos) << run.err;
    // As the message says: a new table takes the waiting batch.
    std::string yaml = read_text(second.path("skippr.yml"));
    yaml.replace(yaml.find("table: t"), 8, "table: t2");
    write_text(second.path("skippr.yml"), yaml);
    auto moved = sync_once(second, "other");
    ASSERT_EQ(moved.exit_code, 0) << moved.err;
    EXPECT_EQ(icebird_digest({"file://" + first.path("lake/t2").string()}, "id").rows, 1u);
    EXPECT_EQ(icebird_digest({"file://" + first.path("lake/t").string()}, "id").rows, 1u);
  }
  {
    // day() of a field that is neither a time nor text: exit 2, fix partition_by.
    PipelineFixture f("");
    write_text(f.path("skippr.yml"), lake_config(f, ", partition_by: [\"day(n)\"]"));
    write_text(f.path("in/a.jsonl"), "{\"id\":1,\"n\":5}\n");
    auto run = sync_once(f);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("day(n) needs a date or timestamp field"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("fix partition_by"), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace skippr::test
