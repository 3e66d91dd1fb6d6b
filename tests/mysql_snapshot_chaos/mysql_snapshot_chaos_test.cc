// A two-million-row MariaDB table read snapshot_then_cdc into DuckDB (merge_by_key) while skipprd is killed again and
// again mid-snapshot and a writer changes the table: each run goes on after the last key committed, so no row of the
// snapshot is committed twice (the ledger's row counts add up to the table plus the writer's changes, exactly), and
// the destination ends equal to the source.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "clients/mariadb/maria_client.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/mariadb_server.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr int kRows = 2'000'000;
constexpr long kMaxChanges = 1500;

// Single-row updates of `big` until stopped, each its own transaction, counted in rows changed (what the binlog
// carries).
struct Writer {
  std::atomic<bool> stop{false};
  std::atomic<long> changes{0};
  std::string error;

  void run(const MariaDbServer& db, const std::string& database) {
    auto conn = MariaConnection::connect({{"host", "127.0.0.1"},
                                          {"port", db.port()},
                                          {"user", MariaDbServer::kUser},
                                          {"password", MariaDbServer::kPassword},
                                          {"database", database}},
                                         "writer");
    if (!conn) {
      error = conn.error().message;
      return;
    }
    std::mt19937 rng(7);
    // A bounded number of changes (a few seconds' worth): they fall within the snapshot or just after it, and the
    // kill loop can then catch up with a stream that ends, instead of chasing one that never does.
    while (!stop && changes < kMaxChanges) {
      const int id = 1 + static_cast<int>(rng() % kRows);
      // Updates only: every key stays in the key range a snapshot reads it in, so the rows a snapshot commits are
      // exactly the table's (inserts and deletes during a snapshot are the ten-table chaos test's).
      const std::string sql =
          rng() % 2 == 0 ? fmt::format("UPDATE big SET a = a + 1, b = CONCAT('changed ', {0}) WHERE id = {0}", id)
                         : fmt::format("UPDATE big SET c = c + 1 WHERE id = {}", id);
      if (auto done = conn->execute(sql); !done) {
        error = done.error().message;
        return;
      }
      const auto affected = conn->query("SELECT ROW_COUNT()");
      if (affected && !affected->rows.empty()) changes += std::stol(affected->rows[0][0].value_or("0"));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
};

// count | sum(id) | sum(a) | sum(length(b)) | sum(id * a % 1000003) | sum(c * 4) (c is a multiple of 1/4): both
// engines compute these exactly, and a row lost, doubled or altered changes them.
std::string source_digest(const MariaDbServer& db, const std::string& database) {
  return db.value(database,
                  "SELECT CONCAT_WS('|', COUNT(*), SUM(id), SUM(a), SUM(CHAR_LENGTH(b)), SUM(id * a % 1000003), "
                  "SUM(CAST(c * 4 AS SIGNED))) FROM big");
}
std::string duckdb_digest(const std::filesystem::path& file) {
  return duckdb_value(file,
                      "SELECT concat_ws('|', count(*), sum(id), sum(a), sum(length(b)), sum(id * a % 1000003), "
                      "sum(CAST(c * 4 AS BIGINT))) FROM big");
}

TEST(MySqlSnapshotChaos, TwoMillionRowsResumeWhereTheyWereUnderKillsWhileTheTableChanges) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("snap");
  db.execute_all(src, {"CREATE TABLE big (id INT PRIMARY KEY, a INT, b VARCHAR(40), c DOUBLE)",
                       fmt::format("INSERT INTO big SELECT seq, seq % 1000, CONCAT('row ', seq), seq / 4 FROM "
                                   "seq_1_to_{}",
                                   kRows)});
  TempDir out;
  const auto duck = out / "big.duckdb";
  PipelineFixture fx(fmt::format(R"(data_sources:
  db:
    MySQL: {{ dsn: "{}", tables: [big], mode: snapshot_then_cdc }}
data_sinks:
  lake:
    DuckDB: {{ path: "{}", table: big }}
pipelines:
  big:
    data_source: data_sources.db
    data_sink: data_sinks.lake
    landing: merge_by_key
    primary_key: [id]
)",
                                 db.dsn(src), duck.string()));
  std::map<std::string, std::string> env = {
      {"SKIPPR_CHAOS_MIN_SECONDS", "0.5"}, {"SKIPPR_CHAOS_MAX_SECONDS", "3.0"}, {"BUFFER_THRESHOLD_BYTES", "2000000"}};
  // The writer starts once the first batch is committed: the snapshot's position is fixed then, so every change it
  // makes comes through the binlog after it.
  Writer writer;
  std::jthread writing([&] {
    const auto wal = fx.path("data") / "pipelines" / "big" / "wal";
    while (!writer.stop) {
      std::error_code ec;
      bool committed = false;
      for (const auto& f : std::filesystem::directory_iterator(wal, ec)) committed = committed || f.file_size() > 0;
      if (committed) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    writer.run(db, src);
  });
  struct StopOnExit {
    Writer& w;
    ~StopOnExit() { w.stop = true; }
  } stop_on_exit{writer};
  const auto started = std::chrono::steady_clock::now();
  auto during = sync_until_done_under_chaos(fx, "big", env, 4100, {.max_runs = 400, .min_kills = 15});
  ASSERT_TRUE(during.finished) << during.failure;
  writer.stop = true;
  writing.join();
  ASSERT_TRUE(writer.error.empty()) << writer.error;
  auto last = fx.skipprd({"sync", "--pipeline", "big", "--once"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  EXPECT_EQ(duckdb_digest(duck), source_digest(db, src));
  // Every row committed to the WAL landed once in the ledger's counts: the snapshot's rows, its end (one truncate
  // row), and each change the writer made. More would be rows the snapshot read twice after a kill.
  const long committed = std::stol(duckdb_value(duck, "SELECT sum(rows) FROM _skippr_batches"));
  const long expected = kRows + 1 + writer.changes.load();
  std::cout << fmt::format(
      "2M-row snapshot under kills: {} runs, {} kills, {:.1f} s, {} writer changes, {} rows "
      "committed (expected {}: {} read twice)\n",
      during.runs + 1, during.kills, seconds, writer.changes.load(), committed, expected, committed - expected);
  EXPECT_GE(during.kills, 15);
  EXPECT_GT(writer.changes.load(), 100);
  EXPECT_EQ(committed, expected) << "rows of the snapshot committed twice (or lost)";
}

}  // namespace
}  // namespace skippr::test
