// The headline promise into PostgreSQL: Sample (1,000,000 rows) -> Postgres with chaos mode on (SIGKILL by timer and
// at every failpoint, including inside the sink's transaction and right after its COMMIT), rerun until a run exits 0.
// Then the table holds every row exactly once, with the same content as a run that was never killed.
#include <gtest/gtest.h>

#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"

namespace skippr::test {
namespace {

constexpr uint64_t kRows = 1000000;

TEST(PostgresChaos, EveryRowLandsExactlyOnceWhateverInstantTheProcessIsKilledAt) {
  auto& pg = SharedPostgres();
  const auto chaos_db = pg.create_database("chaos");
  PipelineFixture chaos(sample_to_postgres_config(kRows, 42));
  auto env = postgres_env(pg, chaos_db);
  env.insert({{"SKIPPR_CHAOS_MODE", "yes"},
              {"SKIPPR_CHAOS_MIN_SECONDS", "0.3"},
              {"SKIPPR_CHAOS_MAX_SECONDS", "2.5"},
              {"BUFFER_THRESHOLD_BYTES", "300000"},
              {"WAL_BYTES_PER_FILE", "500000"}});
  int runs = 0, kills = 0, exit_code = -1;
  while (exit_code != 0 && runs < 400) {
    auto run_env = env;
    run_env["SKIPPR_CHAOS_SEED"] = std::to_string(2000 + runs);  // reproducible: the seed of run n is 2000 + n
    auto r = chaos.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "text"}, run_env);
    ++runs;
    exit_code = r.exit_code;
    ASSERT_TRUE(exit_code == 0 || exit_code == 137) << "run " << runs << " exited " << exit_code << ": " << r.err;
    kills += exit_code == 137;
  }
  ASSERT_EQ(exit_code, 0) << "no run finished within " << runs << " runs";
  const std::string log = read_text(chaos.path("data/pipelines/bikehire/chaos.log"));
  std::cout << "postgres chaos: " << runs << " runs, " << kills << " kills\n";
  EXPECT_GE(kills, 20);
  EXPECT_NE(log.find("at failpoint sink.in_transaction"), std::string::npos) << log;
  EXPECT_NE(log.find("at failpoint sink.after_commit"), std::string::npos) << log;

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

}  // namespace
}  // namespace skippr::test
