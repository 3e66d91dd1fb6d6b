// MySQL CDC exactly once under kill -9: ten MariaDB tables read snapshot_then_cdc into DuckDB and into Postgres,
// merged by each table's key, while a workload commits transactions that touch several tables at once (transfers
// between "bank" rows, inserts, deletes, key-changing updates), the binlog rotates every megabyte, skipprd is killed
// again and again (DATA_DIR lost now and then), and the server itself crashes and restarts once. Every destination
// table must equal its source table row for row.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "clients/mariadb/maria_client.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/mariadb_server.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_server.h"

namespace skippr::test {
namespace {

constexpr int kTables = 10;
constexpr int kRowsPerTable = 400;
constexpr auto kWorkloadTime = std::chrono::seconds(12);

std::string table_name(int t) { return fmt::format("t{:02}", t); }

// Transactions over two or three tables until `stop`; a lost connection (the server's crash) is reconnected.
struct Workload {
  std::atomic<bool> stop{false};
  std::atomic<int> transactions{0};
  std::atomic<int> reconnects{0};

  void run(const MariaDbServer& db, const std::string& database, unsigned seed) {
    std::mt19937 rng(seed);
    std::optional<MariaConnection> conn;
    int next_id = 100000;
    while (!stop) {
      if (!conn) {
        auto c = MariaConnection::connect({{"host", "127.0.0.1"},
                                           {"port", db.port()},
                                           {"user", MariaDbServer::kUser},
                                           {"password", MariaDbServer::kPassword},
                                           {"database", database}},
                                          "workload", 10);
        if (!c) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          continue;
        }
        conn.emplace(std::move(*c));
      }
      const int a = 1 + static_cast<int>(rng() % kTables), b = 1 + static_cast<int>(rng() % kTables);
      const int row = 1 + static_cast<int>(rng() % kRowsPerTable), amount = 1 + static_cast<int>(rng() % 50);
      std::vector<std::string> statements = {
          "START TRANSACTION",
          fmt::format("UPDATE {} SET balance = balance - {}, note = 'out {}' WHERE id = {}", table_name(a), amount,
                      transactions.load(), row),
          fmt::format("UPDATE {} SET balance = balance + {}, note = 'in {}' WHERE id = {}", table_name(b), amount,
                      transactions.load(), row)};
      switch (rng() % 5) {
        case 0:
          statements.push_back(fmt::format("INSERT INTO {} VALUES ({}, 0, 'new', NOW(6))", table_name(a), ++next_id));
          break;
        case 1:
          statements.push_back(fmt::format("DELETE FROM {} WHERE id = {}", table_name(b), 1 + rng() % kRowsPerTable));
          break;
        case 2:  // the key moves
          statements.push_back(
              fmt::format("UPDATE {} SET id = {} WHERE id = {}", table_name(a), ++next_id, 1 + rng() % kRowsPerTable));
          break;
        default:
          statements.push_back(fmt::format("UPDATE {} SET note = REPEAT('p', {}) WHERE id % 97 = {}", table_name(b),
                                           rng() % 200, rng() % 97));
      }
      statements.push_back("COMMIT");
      bool failed = false;
      for (const auto& s : statements) {
        if (auto done = conn->execute(s); !done) {
          failed = true;
          break;
        }
      }
      if (failed) {
        conn.reset();
        reconnects++;
        continue;
      }
      transactions++;
      // A steady load a run can keep up with between kills (about 100 transactions a second).
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

using Rows = std::vector<std::vector<std::string>>;

Rows sorted(Rows rows) {
  std::ranges::sort(rows);
  return rows;
}

Rows source_table(const MariaDbServer& db, const std::string& database, const std::string& table) {
  Rows rows;
  for (const auto& row : db.query(database, fmt::format("SELECT id, balance, coalesce(note, 'NULL'), "
                                                        "DATE_FORMAT(updated, '%Y-%m-%d %H:%i:%s.%f') FROM {}",
                                                        table))) {
    auto& out = rows.emplace_back();
    for (const auto& v : row) out.push_back(v.value_or("NULL"));
  }
  return sorted(std::move(rows));
}

std::string config(const std::string& dsn, const std::string& sink, const std::string& pipeline) {
  return fmt::format(R"(data_sources:
  shop:
    MySQL: {{ dsn: "{}", tables: ["t*"], mode: snapshot_then_cdc }}
data_sinks:
  mirror:
    {}
pipelines:
  {}:
    data_source: data_sources.shop
    data_sink: data_sinks.mirror
    landing: merge_by_key
)",
                     dsn, sink, pipeline);
}

void every_table_equals_its_source_under_kills(bool to_postgres) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("chaos");
  for (int t = 1; t <= kTables; ++t) {
    db.execute_all(src,
                   {fmt::format("CREATE TABLE {} (id INT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(300), "
                                "updated DATETIME(6))",
                                table_name(t)),
                    fmt::format("INSERT INTO {} SELECT seq, 1000, CONCAT('n', seq), TIMESTAMP '2024-01-01 00:00:00' "
                                "+ INTERVAL seq SECOND FROM seq_1_to_{}",
                                table_name(t), kRowsPerTable)});
  }
  std::optional<PostgresServer*> pg;
  std::string dst;
  TempDir files;
  const auto duck = files / "mirror.duckdb";
  std::string sink;
  if (to_postgres) {
    pg = &SharedPostgres();
    dst = (*pg)->create_database("dst");
    sink = fmt::format(R"(Postgres: {{ dsn: "{}", schema: mirror, table: "{{stream}}" }})", (*pg)->uri(dst));
  } else {
    sink = fmt::format(R"(DuckDB: {{ path: "{}", table: "{{stream}}" }})", duck.string());
  }
  const std::string pipeline = to_postgres ? "my_to_postgres" : "my_to_duckdb";
  PipelineFixture fx(config(db.dsn(src), sink, pipeline));
  std::map<std::string, std::string> env = {{"SKIPPR_CHAOS_MIN_SECONDS", "0.3"},
                                            {"SKIPPR_CHAOS_MAX_SECONDS", "2.0"},
                                            {"BUFFER_THRESHOLD_BYTES", "60000"},
                                            {"WAL_BYTES_PER_FILE", "300000"}};
  Workload workload;
  std::jthread writer([&] { workload.run(db, src, to_postgres ? 21 : 22); });
  struct StopOnExit {
    Workload& w;
    ~StopOnExit() { w.stop = true; }
  } stop_on_exit{workload};

  // The snapshot is killed too: it starts while the workload writes.
  auto during = sync_under_chaos_until(fx, pipeline, env, to_postgres ? 3100 : 3200,
                                       std::chrono::steady_clock::now() + kWorkloadTime);
  ASSERT_TRUE(during.finished) << during.failure;
  int kills = during.kills, runs = during.runs;

  // The server crashes and comes back (on a new binlog file); a run while it is down waits for it, then gives up
  // with exit 75 (try again later), nothing lost.
  const std::string binlog_before = db.query("", "SHOW MASTER STATUS").at(0).at(0).value_or("");
  db.crash_and_restart();
  const std::string binlog_after = db.query("", "SHOW MASTER STATUS").at(0).at(0).value_or("");
  EXPECT_NE(binlog_before, binlog_after) << "a restarted server begins a new binlog file";
  auto after_restart = sync_under_chaos_until(fx, pipeline, env, to_postgres ? 3300 : 3400,
                                              std::chrono::steady_clock::now() + kWorkloadTime);
  ASSERT_TRUE(after_restart.finished) << after_restart.failure;
  kills += after_restart.kills;
  runs += after_restart.runs;
  workload.stop = true;
  writer.join();
  auto last = catch_up_under_chaos(fx, pipeline, env, to_postgres ? 3500 : 3600);
  ASSERT_TRUE(last.finished) << last.failure;
  kills += last.kills;
  runs += last.runs;

  std::cout << fmt::format("{}: {} transactions over {} tables, {} runs, {} kills, {} workload reconnects\n", pipeline,
                           workload.transactions.load(), kTables, runs, kills, workload.reconnects.load());
  EXPECT_GE(kills, 15);
  EXPECT_GE(workload.transactions.load(), 200);
  EXPECT_GE(db.query("", "SHOW BINARY LOGS").size(), 3u) << "the binlog rotated";
  for (int t = 1; t <= kTables; ++t) {
    const Rows source = source_table(db, src, table_name(t));
    Rows landed;
    if (to_postgres) {
      for (const auto& row : (*pg)->query(dst, fmt::format("SELECT id::text, balance::text, coalesce(note, 'NULL'), "
                                                           "to_char(updated AT TIME ZONE 'UTC', "
                                                           "'YYYY-MM-DD HH24:MI:SS.US') FROM mirror.{}",
                                                           table_name(t)))) {
        auto& out = landed.emplace_back();
        for (const auto& v : row) out.push_back(v.value_or("NULL"));
      }
      landed = sorted(std::move(landed));
    } else {
      landed = sorted(duckdb_rows(duck, fmt::format("SELECT id::VARCHAR, balance::VARCHAR, coalesce(note, 'NULL'), "
                                                    "strftime(updated AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f') "
                                                    "FROM {}",
                                                    table_name(t))));
    }
    EXPECT_EQ(landed.size(), source.size()) << table_name(t);
    size_t different = 0;
    std::string first;
    for (size_t i = 0; i < std::min(source.size(), landed.size()); ++i) {
      if (source[i] == landed[i]) continue;
      if (different++ == 0) first = fmt::format("{} / {}", fmt::join(source[i], ","), fmt::join(landed[i], ","));
    }
    EXPECT_EQ(different, 0u) << table_name(t) << ": first difference (source / destination): " << first;
  }
}

TEST(MySqlCdcChaos, TenTablesIntoDuckDbEqualTheSourceUnderKillsAndAServerRestart) {
  every_table_equals_its_source_under_kills(/*to_postgres=*/false);
}

TEST(MySqlCdcChaos, TenTablesIntoPostgresEqualTheSourceUnderKillsAndAServerRestart) {
  every_table_equals_its_source_under_kills(/*to_postgres=*/true);
}

}  // namespace
}  // namespace skippr::test
