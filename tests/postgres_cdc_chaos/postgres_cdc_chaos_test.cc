// CDC exactly-once under kill -9: Postgres (snapshot_then_cdc) -> Postgres, DuckDB, Snowflake, BigQuery and Databricks
// (merge_by_key) while a concurrent workload inserts, updates, changes primary keys and deletes on the source, and
// skipprd is killed by timer and at every failpoint, again and again. Once the workload stops and a last run catches
// up, the destination equals the source row for row: a lost insert, update or delete, or a doubled or reordered one,
// shows as a difference. Some rows carry a large value stored out of line (TOAST, > 8 kB) under REPLICA IDENTITY
// DEFAULT: updates of other columns and primary-key updates leave it out of the stream, and the mirror must still hold
// it, never NULL. Then the slot is dropped, rows change, and a RESET re-snapshot (killed too) must again leave the
// mirror equal to the source.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/bigquery_emulator.h"
#include "support/chaos_loop.h"
#include "support/databricks_emulator.h"
#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_server.h"
#include "support/snowflake_emulator.h"

namespace skippr::test {
namespace {

constexpr int kInitialRows = 20000;
constexpr auto kWorkloadTime = std::chrono::seconds(25);

// Where the mirror lands: a Postgres table (schema mirror), a DuckDB file, or Snowflake (its emulator), all merged by
// key.
enum class Mirror { kPostgres, kDuckDb, kSnowflake, kBigQuery, kDatabricks };

// The pipeline's name also names its replication slot, which is global to the server: one per mirror.
std::string pipeline_of(Mirror mirror) {
  switch (mirror) {
    case Mirror::kPostgres:
      return "to_postgres";
    case Mirror::kDuckDb:
      return "to_duckdb";
    case Mirror::kSnowflake:
      return "to_snowflake";
    case Mirror::kBigQuery:
      return "to_bigquery";
    case Mirror::kDatabricks:
      return "to_databricks";
  }
  return "";
}

std::string config(const std::string& source_uri, Mirror mirror, const std::string& sink_uri_or_file) {
  std::string sink;
  switch (mirror) {
    case Mirror::kPostgres:
      sink = fmt::format(R"(Postgres: {{ dsn: "{}", schema: mirror, table: accounts }})", sink_uri_or_file);
      break;
    case Mirror::kDuckDb:
      sink = fmt::format(R"(DuckDB: {{ path: "{}", table: accounts }})", sink_uri_or_file);
      break;
    case Mirror::kSnowflake:
      sink = snowflake_sink(SharedSnowflake().endpoint(), "accounts");
      break;
    case Mirror::kBigQuery:
      sink = bigquery_sink(SharedBigQuery().endpoint(), "accounts");
      break;
    case Mirror::kDatabricks:
      sink = databricks_sink(SharedDatabricks().endpoint(), "accounts");
      break;
  }
  return fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [accounts], mode: snapshot_then_cdc }}
data_sinks:
  mirror_db:
    {}
pipelines:
  {}:
    data_source: data_sources.app
    data_sink: data_sinks.mirror_db
    landing: merge_by_key
    primary_key: id
)",
                     source_uri, sink, pipeline_of(mirror));
}

// Random transactions of several statements (some of many rows) until `stop`; counts what it did.
struct Workload {
  std::atomic<bool> stop{false};
  std::atomic<int> transactions{0}, failures{0};
  std::string error;

  void run(const std::string& uri, uint32_t seed) {
    PGconn* conn = PQconnectdb(uri.c_str());
    std::mt19937 rng(seed);
    int next_id = kInitialRows + 1;
    auto any_id = [&] { return std::uniform_int_distribution<int>(1, next_id - 1)(rng); };
    auto exec = [&](const std::string& sql) {
      PGresult* res = PQexec(conn, sql.c_str());
      const bool good = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
      if (!good && error.empty()) error = sql + ": " + PQresultErrorMessage(res);
      PQclear(res);
      return good;
    };
    while (!stop) {
      std::string tx = "BEGIN;";
      const int kind = std::uniform_int_distribution<int>(0, 99)(rng);
      if (kind < 4) {  // one transaction of a few hundred rows
        tx += fmt::format("UPDATE shop.accounts SET balance = balance + 1, updated = now() WHERE id % 97 = {};", kind);
      } else {
        const int statements = std::uniform_int_distribution<int>(1, 6)(rng);
        for (int s = 0; s < statements; ++s) {
          const int what = std::uniform_int_distribution<int>(0, 99)(rng);
          const int id = any_id();
          if (what < 40) {
            tx += fmt::format(
                "UPDATE shop.accounts SET name = {}, balance = {}, amount = {}, updated = now(), active = {}, doc = "
                "{} WHERE id = {};",
                what % 5 == 0 ? "NULL" : fmt::format("'n{}-{}'", id, what), rng() % 100000,
                what % 7 == 0 ? "NULL" : fmt::format("{}.{:03}", rng() % 10000, rng() % 1000),
                what % 2 ? "true" : "false",
                what % 6 == 0 ? "NULL" : fmt::format("'{{\"v\": {}, \"t\": [\"x\", {}]}}'", rng() % 100, what), id);
          } else if (what < 42) {  // a new large value; later updates of other columns leave it out of the stream
            tx += fmt::format("UPDATE shop.accounts SET big = repeat('y', 9000 + {}) || id WHERE id = {};", what, id);
          } else if (what < 60) {
            tx += fmt::format(
                "INSERT INTO shop.accounts VALUES ({}, 'new {}', {}, 1.5, now(), true, '{{}}', CASE WHEN {} % 15 = 0 "
                "THEN repeat('z', 20000) || {} END);",
                next_id, next_id, what, what, next_id);
            ++next_id;
          } else if (what < 72) {
            tx += fmt::format(
                "INSERT INTO shop.accounts SELECT i, 'bulk ' || i, i, i / 7.0, now(), false, NULL, NULL "
                "FROM generate_series({}, {}) i;",
                next_id, next_id + 19);
            next_id += 20;
          } else if (what < 88) {
            tx += fmt::format("DELETE FROM shop.accounts WHERE id = {};", id);
          } else {  // a primary-key update
            tx += fmt::format("UPDATE shop.accounts SET id = {} WHERE id = {};", next_id, id);
            ++next_id;
          }
        }
      }
      tx += "COMMIT;";
      if (exec(tx)) {
        ++transactions;
      } else {
        ++failures;
        exec("ROLLBACK");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(8));
    }
    PQfinish(conn);
  }
};

using Rows = std::vector<std::vector<std::string>>;  // "NULL" for nulls

// Every column in a form that all sides print alike (the mirrors keep numeric as text, timestamps as timestamps).
Rows postgres_rows(const PostgresServer& pg, const std::string& db, const std::string& table) {
  Rows rows;
  for (const auto& row :
       pg.query(db, fmt::format("SELECT id::bigint::text, name, balance::text, amount::text, (extract(epoch FROM "
                                "updated) * 1000000)::bigint::text, active::text, doc::jsonb::text, "
                                "length(big)::text || ' ' || md5(big) FROM {} ORDER BY id::bigint",
                                table))) {
    auto& out = rows.emplace_back();
    for (const auto& value : row) out.push_back(value.value_or("NULL"));
  }
  return rows;
}

constexpr const char* kMirrorRowsSql =
    "SELECT id::BIGINT::VARCHAR, name, balance::VARCHAR, amount::VARCHAR, epoch_us(updated)::VARCHAR, "
    "active::VARCHAR, doc::VARCHAR, length(big)::VARCHAR || ' ' || md5(big) FROM {} ORDER BY id::BIGINT";

Rows duckdb_mirror_rows(const std::filesystem::path& db) {
  return duckdb_rows(db, fmt::format(kMirrorRowsSql, "accounts"));
}

// The emulator's DuckDB holds what Snowflake would: read it with the same SQL.
Rows snowflake_mirror_rows() {
  return SharedSnowflake().query(fmt::format(kMirrorRowsSql, "\"ANALYTICS\".\"PUBLIC\".\"accounts\""));
}

// Drops the database's replication slots once their walsenders are gone (as an operator, or max_slot_wal_keep_size).
void drop_replication_slots(const PostgresServer& pg, const std::string& db) {
  for (int i = 0; i < 100; ++i) {
    pg.execute(db,
               "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = "
               "current_database() AND NOT active");
    if (pg.value(db, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()") == "0") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "the replication slot stayed active";
}

void mirror_equals_source_after_workload_and_kills(Mirror mirror) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("src");
  const auto dst = mirror == Mirror::kPostgres ? pg.create_database("dst") : std::string();
  pg.execute(
      src, fmt::format("CREATE SCHEMA shop; CREATE TABLE shop.accounts (id int PRIMARY KEY, name text, balance bigint, "
                       "amount numeric(14,3), updated timestamptz, active boolean, doc jsonb, big text); ALTER TABLE "
                       "shop.accounts ALTER COLUMN big SET STORAGE EXTERNAL; INSERT INTO shop.accounts SELECT i, "
                       "'name ' || i, i * 10, i / 3.0, timestamptz '2024-01-01 00:00:00+00' + i * interval '1.5 s', "
                       "i % 3 = 0, CASE WHEN i % 5 = 0 THEN NULL ELSE jsonb_build_object('i', i) END, CASE WHEN i % "
                       "200 = 0 THEN repeat('x', 20000) || i END FROM generate_series(1, {}) i",
                       kInitialRows));
  TempDir files;
  const auto duckdb_file = files / "mirror.duckdb";
  PipelineFixture fx(config(pg.uri(src), mirror, mirror == Mirror::kPostgres ? pg.uri(dst) : duckdb_file.string()));
  std::map<std::string, std::string> env = {{"SKIPPR_CHAOS_MIN_SECONDS", "0.3"},
                                            {"SKIPPR_CHAOS_MAX_SECONDS", "2.0"},
                                            {"BUFFER_THRESHOLD_BYTES", "40000"},
                                            {"WAL_BYTES_PER_FILE", "200000"}};

  Workload workload;
  const std::string pipeline = pipeline_of(mirror);
  std::jthread writer([&] { workload.run(pg.uri(src), 7); });
  struct StopOnExit {  // a failed ASSERT returns early: stop the workload before the thread is joined
    Workload& w;
    ~StopOnExit() { w.stop = true; }
  } stop_on_exit{workload};
  const auto until = std::chrono::steady_clock::now() + kWorkloadTime;
  // While the workload writes, a run may not catch up before chaos strikes (on a busy machine, never): runs go on
  // until the workload's time is up, each one killed or finished.
  auto during = sync_under_chaos_until(fx, pipeline, env, 5000, until);
  ASSERT_TRUE(during.finished) << during.failure;
  int kills = during.kills, runs = during.runs;
  workload.stop = true;
  writer.join();
  ASSERT_TRUE(workload.error.empty()) << workload.error;
  auto last = catch_up_under_chaos(fx, pipeline, env, 99000);
  ASSERT_TRUE(last.finished) << last.failure;
  kills += last.kills;
  runs += last.runs;
  // A RESET after changes the stream never brings: the slot is dropped, rows are deleted and keys moved meanwhile.
  // The re-snapshot (under chaos too) must still leave the mirror equal to the source.
  pg.execute(src,
             "DELETE FROM shop.accounts WHERE id % 11 = 0; UPDATE shop.accounts SET id = id + 1000000, name = "
             "'moved' WHERE id % 13 = 0; UPDATE shop.accounts SET name = 'reset' WHERE id % 17 = 0");
  drop_replication_slots(pg, src);
  auto reset = fx.skipprd({"query", "--sql", "RESET PIPELINE " + pipeline}, env);
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  auto catch_up_env = env;
  catch_up_env["SKIPPR_CHAOS_MAX_SECONDS"] = "4.0";  // one run can reach the end on a busy machine too
  auto after_reset = sync_until_done_under_chaos(fx, pipeline, catch_up_env, 199000);
  ASSERT_TRUE(after_reset.finished) << after_reset.failure;
  kills += after_reset.kills;
  runs += after_reset.runs;

  std::string cause_text;
  for (const auto& [cause, n] : last.by_cause) cause_text += fmt::format(" {}={}", cause, n);
  std::cout << fmt::format("postgres cdc chaos into {}: {} transactions ({} failed), {} runs, {} kills:{}\n",
                           pipeline_of(mirror), workload.transactions.load(), workload.failures.load(), runs + 1, kills,
                           cause_text);
  EXPECT_GE(workload.transactions.load(), 200);
  EXPECT_GE(kills, 5);

  Rows source = postgres_rows(pg, src, "shop.accounts");
  Rows landed = mirror == Mirror::kPostgres    ? postgres_rows(pg, dst, "mirror.accounts")
                : mirror == Mirror::kDuckDb    ? duckdb_mirror_rows(duckdb_file)
                : mirror == Mirror::kSnowflake ? snowflake_mirror_rows()
                : mirror == Mirror::kBigQuery
                    ? SharedBigQuery().query(fmt::format(kMirrorRowsSql, "\"analytics\".\"accounts\""))
                    : SharedDatabricks().query(fmt::format(kMirrorRowsSql, "\"lakehouse\".\"analytics\".\"accounts\""));
  // BigQuery's JSON type keeps a document, not its text (it prints {"i":1} for {"i": 1}): compare documents there.
  if (mirror == Mirror::kBigQuery) {
    for (Rows* rows : {&source, &landed}) {
      for (auto& row : *rows) {
        if (row[6] != "NULL") row[6] = nlohmann::json::parse(row[6]).dump();
      }
    }
  }
  std::set<std::string> source_keys, landed_keys;
  for (const auto& row : source) source_keys.insert(row[0]);
  int resurrected = 0;
  for (const auto& row : landed) {
    resurrected += source_keys.count(row[0]) ? 0 : 1;
    landed_keys.insert(row[0]);
  }
  EXPECT_EQ(resurrected, 0) << "rows deleted (or moved by a key update) on the source are still in the mirror";
  EXPECT_EQ(landed.size(), source.size());
  EXPECT_EQ(landed_keys.size(), landed.size()) << "a key is in the mirror twice";
  int different = 0;
  std::string first_difference;
  for (size_t i = 0; i < std::min(source.size(), landed.size()); ++i) {
    if (source[i] == landed[i]) continue;
    if (different++ == 0) {
      for (size_t c = 0; c < source[i].size(); ++c) {
        first_difference += fmt::format("{}/{} ", source[i][c], landed[i][c]);
      }
    }
  }
  EXPECT_EQ(different, 0) << "rows differ (lost or stale update); first (source/mirror): " << first_difference;
}

TEST(PostgresCdcChaos, APostgresMirrorEqualsTheSourceAfterAConcurrentWorkloadAndRepeatedKills) {
  mirror_equals_source_after_workload_and_kills(Mirror::kPostgres);
}

TEST(PostgresCdcChaos, ADuckDbMirrorEqualsTheSourceAfterAConcurrentWorkloadAndRepeatedKills) {
  mirror_equals_source_after_workload_and_kills(Mirror::kDuckDb);
}

TEST(PostgresCdcChaos, ASnowflakeMirrorEqualsTheSourceAfterAConcurrentWorkloadAndRepeatedKills) {
  mirror_equals_source_after_workload_and_kills(Mirror::kSnowflake);
}

TEST(PostgresCdcChaos, ABigQueryMirrorEqualsTheSourceAfterAConcurrentWorkloadAndRepeatedKills) {
  mirror_equals_source_after_workload_and_kills(Mirror::kBigQuery);
}

TEST(PostgresCdcChaos, ADatabricksMirrorEqualsTheSourceAfterAConcurrentWorkloadAndRepeatedKills) {
  mirror_equals_source_after_workload_and_kills(Mirror::kDatabricks);
}

}  // namespace
}  // namespace skippr::test
