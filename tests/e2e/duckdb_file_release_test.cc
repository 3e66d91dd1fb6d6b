// A running sync holds its DuckDB file only while landing (issue 41): between polls another process can open the
// file and read the table; input that arrives later still lands, even when a reader holds the file at that moment.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

using namespace std::chrono_literals;

// The table's row count as another process sees it, once it can open the file (retried for up to `seconds`);
// nullopt when the file stays locked that long.
std::optional<std::string> count_when_readable(const std::filesystem::path& db, const std::string& expected,
                                               double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::optional<std::string> seen;
  while (std::chrono::steady_clock::now() < until) {
    try {
      seen = duckdb_value(db, "SELECT count(*) FROM t");
      if (*seen == expected) return seen;
    } catch (const std::exception&) {  // locked by the writer, or the table is not there yet
    }
    std::this_thread::sleep_for(100ms);
  }
  return seen;
}

TEST(DuckDbFileRelease, AnIdleSyncLetsOthersReadTheFileAndStillLandsWhatComesNext) {
  PipelineFixture f(jsonl_files_to_sink_config("in/*.jsonl", "DuckDB: { path: out.duckdb, table: t }"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--output", "text"}, f.root(),
                                {{"DATA_DIR", (f.root() / "data").string()}, {"SYNC_FREQUENCY", "1"}});
  const auto db = f.path("out.duckdb");
  // The first landing is read by another process while the sync runs on (it polls every second).
  EXPECT_EQ(count_when_readable(db, "3", 30), "3") << read_text(f.path("spawned.err"));
  // More input lands too, including while a reader keeps opening the file.
  write_text(f.path("in/b.jsonl"), "{\"id\":4}\n{\"id\":5}\n");
  EXPECT_EQ(count_when_readable(db, "5", 30), "5") << read_text(f.path("spawned.err"));
  EXPECT_EQ(duckdb_value(db, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t"), "1,2,3,4,5");
  ASSERT_EQ(kill(pid, 0), 0) << "the sync must still be running";
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_process(pid), 0) << read_text(f.path("spawned.err"));
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM t"), "5");
}

}  // namespace
}  // namespace skippr::test
