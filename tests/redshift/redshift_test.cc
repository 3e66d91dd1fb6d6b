// The Redshift sink against tests/support/redshift_emulator.py: Redshift's wire protocol served by the real
// PostgreSQL server, COPY FROM 's3://' read from moto_server. A SIGKILL loop (DATA_DIR lost every fourth kill) with
// COMMIT answers dropped by the emulator ends with the table equal to an unkilled run's, each BatchId once in the
// ledger, and no staged object left in the bucket.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>

#include "support/chaos_loop.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"
#include "support/redshift_emulator.h"

namespace skippr::test {
namespace {

constexpr const char* kRole = "arn:aws:iam::123456789012:role/skippr-load";

std::string redshift_config(uint64_t rows, uint64_t seed, const std::string& bucket, const std::string& role = kRole,
                            const std::string& landing = "append") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: {} }}
data_sinks:
  warehouse:
    Redshift:
      host: 127.0.0.1
      port: ${{RS_PORT}}
      user: postgres
      password: "${{PG_PASSWORD}}"
      database: "${{PG_DATABASE}}"
      schema: bike
      table: trips
      s3_bucket: {}
      iam_role: "{}"
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: {}
{})",
                     rows, seed, bucket, role, landing, landing == "merge_by_key" ? "    primary_key: trip_id\n" : "");
}

std::map<std::string, std::string> redshift_env(const RedshiftEmulator& emulator, const std::string& db) {
  auto env = SharedMoto().env();
  for (const auto& [k, v] : postgres_env(SharedPostgres(), db)) env[k] = v;
  env["RS_PORT"] = std::to_string(emulator.port());
  return env;
}

TEST(Redshift, KilledAndDroppedCommitsEndExactlyOnceAsUnkilled) {
  constexpr uint64_t kRows = 200000;
  auto& pg = SharedPostgres();
  const RedshiftEmulator emulator(pg, SharedMoto().env(), /*drop_commit_every=*/4);
  const auto db = pg.create_database("rs");
  const std::string bucket = SharedMoto().create_bucket("stage");
  PipelineFixture f(redshift_config(kRows, 21, bucket));
  auto env = redshift_env(emulator, db);
  env["BUFFER_THRESHOLD_BYTES"] = "100000";
  const ChaosRuns runs = sync_until_done_under_chaos(
      f, "bikehire", env, /*seed_base=*/7100,
      {.max_runs = 300, .lose_data_dir_every = 4, .each_failpoint_in_turn = true, .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.summary() << "\n" << runs.failure;
  std::cout << "redshift: " << runs.summary() << ", " << emulator.dropped_commits() << " COMMIT answers dropped\n";
  EXPECT_GE(runs.kills, 15);
  EXPECT_GE(runs.data_dirs_lost, 3);
  EXPECT_GT(emulator.dropped_commits(), 0);

  const PgTripsDigest got = pg_trips_digest(pg, db);
  EXPECT_EQ(got.rows, std::to_string(kRows));
  EXPECT_EQ(got.distinct_ids, std::to_string(kRows));
  EXPECT_EQ(pg.value(db, "SELECT sum(\"rows\") FROM bike._skippr_batches"), std::to_string(kRows));
  EXPECT_EQ(pg.value(db, "SELECT count(*) - count(DISTINCT batch_id) FROM bike._skippr_batches"), "0");
  EXPECT_TRUE(SharedMoto().keys(bucket).empty()) << "staged objects left: " << SharedMoto().keys(bucket).size();

  const RedshiftEmulator calm_emulator(pg, SharedMoto().env());
  const auto calm_db = pg.create_database("rscalm");
  PipelineFixture calm(redshift_config(kRows, 21, SharedMoto().create_bucket("calm")));
  auto r = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, redshift_env(calm_emulator, calm_db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, pg_trips_digest(pg, calm_db));
}

TEST(Redshift, ABadRoleOrAnUnbuiltLandingStopsBeforeAnythingIsRead) {
  auto& pg = SharedPostgres();
  const RedshiftEmulator emulator(pg, SharedMoto().env());
  const auto db = pg.create_database("rsbad");
  const std::string bucket = SharedMoto().create_bucket("bad");
  PipelineFixture bad_role(redshift_config(100, 1, bucket, "role/skippr"));
  auto r = bad_role.skipprd({"sync", "--pipeline", "bikehire", "--once"}, redshift_env(emulator, db));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is not a role ARN"), std::string::npos) << r.err;

  PipelineFixture merge(redshift_config(100, 1, bucket, kRole, "merge_by_key"));
  r = merge.skipprd({"sync", "--pipeline", "bikehire", "--once"}, redshift_env(emulator, db));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("append only"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace skippr::test
