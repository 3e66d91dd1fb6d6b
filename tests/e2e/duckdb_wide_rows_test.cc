// Wide rows into DuckDB (issue 41): DuckDB holds a block per column that a transaction appends to, so a 2,000-column
// row needs far more than the sink's usual memory_limit. The sink raises the limit for such a batch, up to the sink's
// max_memory_bytes; a batch that would need more waits in the WAL with exit 2 naming the setting.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr int kColumns = 2000;

// One JSON line with `columns` fields c0..c<n-1> (strings, as a wide export would have) and an id.
std::string wide_row(int id, int columns) {
  std::string line = fmt::format("{{\"id\":{}", id);
  for (int c = 0; c < columns; ++c) line += fmt::format(",\"c{}\":\"value {} of row {}\"", c, c, id);
  return line + "}\n";
}

std::string wide_rows(int first_id, int count, int columns) {
  std::string text;
  for (int i = 0; i < count; ++i) text += wide_row(first_id + i, columns);
  return text;
}

std::string config(const std::string& landing, const std::string& extra = "") {
  return jsonl_files_to_sink_config("in/*.jsonl", fmt::format("DuckDB: {{ path: out.duckdb, table: wide{} }}", extra)) +
         fmt::format("    landing: {}\n    primary_key: [id]\n", landing);
}

void expect_wide_table(const std::filesystem::path& db, int rows) {
  EXPECT_EQ(duckdb_value(db,
                         "SELECT count(*) FROM information_schema.columns WHERE table_name = 'wide' AND "
                         "column_name NOT LIKE '\\_skippr\\_%' ESCAPE '\\'"),
            std::to_string(kColumns + 1));
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM wide"), std::to_string(rows));
  EXPECT_EQ(duckdb_value(db, fmt::format("SELECT c{} FROM wide WHERE id = 1", kColumns - 1)),
            fmt::format("value {} of row 1", kColumns - 1));
}

TEST(DuckDbWideRows, OneRowOf2000ColumnsLandsWithEachLanding) {
  for (const std::string landing : {"append", "merge_by_key", "replace_table"}) {
    SCOPED_TRACE(landing);
    PipelineFixture f(config(landing));
    write_text(f.path("in/a.jsonl"), wide_row(1, kColumns));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_wide_table(f.path("out.duckdb"), 1);
    // A second run: a few hundred wide rows more (several batches), into the now wide table.
    write_text(f.path("in/b.jsonl"), wide_rows(2, 300, kColumns));
    r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "4000000"}}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_wide_table(f.path("out.duckdb"), 301);
  }
}

// A crash after a wide landing committed but before DuckDB checkpointed it leaves DuckDB's WAL beside the file, and
// opening the file replays it: that needs the memory the landing needed, so the open is not held to the usual limit.
TEST(DuckDbWideRows, ADuckDbWalLeftByAWideLandingIsReplayedAtOpen) {
  PipelineFixture f(config("append"));
  std::string columns = "id BIGINT", values = "range AS id";
  for (int c = 0; c < kColumns; ++c) {
    columns += fmt::format(", c{} VARCHAR", c);
    values += fmt::format(", 'value {} of row ' || range", c);
  }
  duckdb_write(f.path("out.duckdb"), fmt::format("PRAGMA disable_checkpoint_on_shutdown; SET checkpoint_threshold = "
                                                 "'10GB'; CREATE TABLE wide ({}); INSERT INTO wide SELECT {} FROM "
                                                 "range(1000, 1300)",
                                                 columns, values));
  ASSERT_TRUE(std::filesystem::exists(f.path("out.duckdb.wal")));
  write_text(f.path("in/a.jsonl"), wide_row(1, kColumns));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SINK_RETRY_SECONDS", "5"}}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_wide_table(f.path("out.duckdb"), 301);
}

// Memory stays bounded by the configuration: a batch that needs more than max_memory_bytes is not landed, and the
// message names the setting to raise; raising it lands the batch that waited.
TEST(DuckDbWideRows, ABatchBeyondMaxMemoryBytesWaitsAndNamesTheSetting) {
  PipelineFixture f(config("append", ", max_memory_bytes: 100000000"));
  write_text(f.path("in/a.jsonl"), wide_row(1, kColumns));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {}, 300);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("max_memory_bytes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wait in the WAL"), std::string::npos) << r.err;
  write_text(f.path("skippr.yml"), config("append", ", max_memory_bytes: 2000000000"));
  r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_wide_table(f.path("out.duckdb"), 1);
}

}  // namespace
}  // namespace skippr::test
