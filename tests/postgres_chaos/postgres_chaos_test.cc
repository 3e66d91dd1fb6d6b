// The headline promise into PostgreSQL: Sample (1,500,000 rows) -> Postgres with chaos mode on (SIGKILL by timer and
// at every failpoint, including inside the sink's transaction and right after its COMMIT), rerun until a run exits 0.
// Then the table holds every row exactly once, with the same content as a run that was never killed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/chaos_loop.h"
#include "support/postgres_pipeline.h"

namespace skippr::test {
namespace {

constexpr uint64_t kRows = 5000000;  // enough work that 20 kills happen on a fast machine too

TEST(PostgresChaos, EveryRowLandsExactlyOnceWhateverInstantTheProcessIsKilledAt) {
  auto& pg = SharedPostgres();
  const auto chaos_db = pg.create_database("chaos");
  PipelineFixture chaos(sample_to_postgres_config(kRows, 42));
  auto env = postgres_env(pg, chaos_db);
  env.insert({{"SKIPPR_CHAOS_MIN_SECONDS", "0.3"},
              {"SKIPPR_CHAOS_MAX_SECONDS", "2.5"},
              {"BUFFER_THRESHOLD_BYTES", "300000"},
              {"WAL_BYTES_PER_FILE", "500000"}});
  const auto chaos_runs = sync_until_done_under_chaos(
      chaos, "bikehire", env, /*seed_base=*/2000, {.max_runs = 400, .each_failpoint_in_turn = true, .min_kills = 20});
  ASSERT_TRUE(chaos_runs.finished) << chaos_runs.failure;
  std::cout << "postgres chaos: " << chaos_runs.summary() << "\n";
  EXPECT_GE(chaos_runs.kills, 20);
  EXPECT_GE(chaos_runs.by_cause.count("sink.in_transaction"), 1u);
  EXPECT_GE(chaos_runs.by_cause.count("sink.after_commit"), 1u);

  const PgTripsDigest got = pg_trips_digest(pg, chaos_db);
  EXPECT_EQ(got.rows, std::to_string(kRows));
  EXPECT_EQ(got.distinct_ids, std::to_string(kRows));
  EXPECT_EQ(pg.value(chaos_db,
                     "SELECT count(*) FROM (SELECT trip_id FROM bike.trips GROUP BY trip_id HAVING "
                     "count(*) > 1) d"),
            "0");
  // Every landed batch is in the ledger once, and the ledger's row counts add up to the table.
  EXPECT_EQ(pg.value(chaos_db, "SELECT sum(\"rows\") FROM bike._skippr_batches"), std::to_string(kRows));

  const auto calm_db = pg.create_database("calm");
  PipelineFixture calm(sample_to_postgres_config(kRows, 42));
  auto r = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, postgres_env(pg, calm_db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, pg_trips_digest(pg, calm_db));
}

// Coalesced landing into Postgres, killed on purpose inside a group's transaction (some of its batches written) and
// after a group committed but before its LANDED mark; the replays group differently, and each batch lands once.
TEST(PostgresChaos, EachBatchLandsOnceWhenKilledInsideAGroupOrBeforeItsLandedMark) {
  constexpr uint64_t kGroupRows = 60000;
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("groups");
  PipelineFixture f(sample_to_postgres_config(kGroupRows, 5));
  auto env = postgres_env(pg, db);
  env.insert({{"BUFFER_THRESHOLD_BYTES", "40000"}, {"LANDING_QUEUE_BYTES", "4MiB"}});
  auto killed_at = [&](const std::string& point, int pass) {
    return f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "debug"}, armed_at(env, point, pass));
  };
  auto inside = killed_at("sink.in_group", 1);
  ASSERT_EQ(inside.exit_code, 137) << "no group of several batches formed?\n" << inside.err;
  EXPECT_NE(inside.err.find("batches) in one transaction"), std::string::npos) << inside.err;
  auto after_commit = killed_at("sink.after_group_commit", 1);
  ASSERT_EQ(after_commit.exit_code, 137) << after_commit.err;
  auto again = killed_at("sink.in_group", 3);
  ASSERT_TRUE(again.exit_code == 137 || again.exit_code == 0) << again.err;
  auto done = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(done.exit_code, 0) << done.err;

  const PgTripsDigest got = pg_trips_digest(pg, db);
  EXPECT_EQ(got.rows, std::to_string(kGroupRows));
  EXPECT_EQ(got.distinct_ids, std::to_string(kGroupRows));
  EXPECT_EQ(pg.value(db, "SELECT sum(\"rows\") FROM bike._skippr_batches"), std::to_string(kGroupRows));
  const auto calm_db = pg.create_database("groups_calm");
  PipelineFixture calm(sample_to_postgres_config(kGroupRows, 5));
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, postgres_env(pg, calm_db)).exit_code, 0);
  EXPECT_EQ(got, pg_trips_digest(pg, calm_db));
}

// A group that fails because of one batch (a row breaks a constraint the user put on the table) is landed again
// one batch at a time: the batches before the faulty one land, exactly once, and the run stops at that batch.
TEST(PostgresChaos, AGroupWithAFaultyBatchLandsTheBatchesBeforeIt) {
  constexpr uint64_t kRows = 30000;
  constexpr int kBadTrip = 20000;
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("split");
  PipelineFixture f(sample_to_postgres_config(kRows, 3));
  auto env = postgres_env(pg, db);
  env.insert({{"BUFFER_THRESHOLD_BYTES", "40000"}, {"LANDING_QUEUE_BYTES", "32MiB"}, {"SINK_RETRY_SECONDS", "1"}});
  pg.execute(db, fmt::format("CREATE SCHEMA bike; CREATE TABLE bike.trips (trip_id bigint CONSTRAINT no_bad_trip "
                             "CHECK (trip_id <> {}))",
                             kBadTrip));
  // 1. A first run, killed at its first landing: the pipeline has its state (and its lineage), nothing landed.
  const auto first = armed_at(env, "sink.in_transaction");
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, first).exit_code, 137);
  ASSERT_EQ(pg.value(db, "SELECT count(*) FROM bike.trips"), "0");
  // 2. Postgres out of reach: every row is committed to the WAL, nothing lands (exit 75).
  auto away = env;
  away["PG_PORT"] = "1";
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, away).exit_code, 75);
  // 3. Back: the waiting batches land in groups; the one holding the bad trip fails, and is found batch by batch.
  auto back = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "debug"}, env);
  EXPECT_NE(back.exit_code, 0) << back.err;
  EXPECT_NE(back.err.find("in one transaction failed; landing them one at a time"), std::string::npos) << back.err;
  EXPECT_NE(back.err.find("no_bad_trip"), std::string::npos) << back.err;
  const int landed = std::stoi(pg.value(db, "SELECT count(*) FROM bike.trips"));
  EXPECT_EQ(pg.value(db, "SELECT count(DISTINCT trip_id) FROM bike.trips"), std::to_string(landed));
  // Every trip before the faulty batch, and none from it on: the batches are ~250 rows.
  EXPECT_EQ(pg.value(db, "SELECT coalesce(max(trip_id), 0) FROM bike.trips"), std::to_string(landed));
  EXPECT_LT(landed, kBadTrip);
  EXPECT_GT(landed, kBadTrip - 1000);
}

// DATA_DIR deleted after every third kill: the ledger in Postgres says where the source resumes.
TEST(PostgresChaos, EveryRowLandsExactlyOnceWhenDataDirIsLostBetweenKills) {
  constexpr uint64_t kLossRows = 300000;
  auto& pg = SharedPostgres();
  const auto chaos_db = pg.create_database("lost");
  PipelineFixture chaos(sample_to_postgres_config(kLossRows, 9));
  auto env = postgres_env(pg, chaos_db);
  env.insert({{"SKIPPR_CHAOS_MIN_SECONDS", "0.2"},
              {"SKIPPR_CHAOS_MAX_SECONDS", "1.5"},
              {"BUFFER_THRESHOLD_BYTES", "200000"},
              {"WAL_BYTES_PER_FILE", "500000"}});
  const auto chaos_runs = sync_until_done_under_chaos(chaos, "bikehire", env, /*seed_base=*/4000,
                                                      {.max_runs = 400, .lose_data_dir_every = 3, .min_kills = 9});
  ASSERT_TRUE(chaos_runs.finished) << chaos_runs.failure;
  std::cout << "postgres chaos with DATA_DIR loss: " << chaos_runs.summary() << "\n";
  EXPECT_GE(chaos_runs.kills, 9);
  EXPECT_GE(chaos_runs.data_dirs_lost, 3);

  const PgTripsDigest got = pg_trips_digest(pg, chaos_db);
  EXPECT_EQ(got.rows, std::to_string(kLossRows));
  EXPECT_EQ(got.distinct_ids, std::to_string(kLossRows));

  const auto calm_db = pg.create_database("lostcalm");
  PipelineFixture calm(sample_to_postgres_config(kLossRows, 9));
  auto r = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, postgres_env(pg, calm_db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, pg_trips_digest(pg, calm_db));
}

}  // namespace
}  // namespace skippr::test
