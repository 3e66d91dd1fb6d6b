// skipprd sync into a real PostgreSQL: every row once, reruns add nothing, and a user's mistake stops the run with
// exit 2 and one clear sentence before anything is committed.
#include <gtest/gtest.h>

#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"

namespace skippr::test {
namespace {

const std::vector<std::string> kSync = {"sync", "--pipeline", "bikehire", "--once", "--output", "json"};

bool committed_anything(const ProcessResult& r) { return r.out.find("\"batch_committed\"") != std::string::npos; }

TEST(PostgresPipeline, SampleLandsEveryRowOnceAndARerunAddsNothing) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("append");
  PipelineFixture fx(sample_to_postgres_config(20000, 7));
  auto env = postgres_env(pg, db);
  env["BUFFER_THRESHOLD_BYTES"] = "400000";  // several batches
  auto r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto first = pg_trips_digest(pg, db);
  EXPECT_EQ(first.rows, "20000");
  EXPECT_EQ(first.distinct_ids, "20000");
  EXPECT_GT(std::stoi(pg.value(db, "SELECT count(*) FROM bike._skippr_batches")), 3);
  EXPECT_EQ(pg.value(db, "SELECT sum(\"rows\") FROM bike._skippr_batches"), "20000");

  r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg_trips_digest(pg, db), first);

  // The same rows through a fresh pipeline land with the same content (the digest is deterministic).
  const auto db2 = pg.create_database("append");
  PipelineFixture other(sample_to_postgres_config(20000, 7));
  r = other.skipprd(kSync, postgres_env(pg, db2));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg_trips_digest(pg, db2), first);
}

TEST(PostgresPipeline, AWrongPasswordExitsTwoWithOneSentenceBeforeAnythingIsCommitted) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("badpw");
  PipelineFixture fx(sample_to_postgres_config(1000, 1));
  auto env = postgres_env(pg, db);
  env["PG_PASSWORD"] = "not-the-password";
  auto r = fx.skipprd(kSync, env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("sink 'warehouse': cannot connect to PostgreSQL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("password authentication failed for user \"postgres\""), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not-the-password"), std::string::npos) << "the password leaked into the message";
  EXPECT_FALSE(committed_anything(r)) << r.out;
}

TEST(PostgresPipeline, AMissingDatabaseExitsTwo) {
  auto& pg = SharedPostgres();
  PipelineFixture fx(sample_to_postgres_config(1000, 1));
  auto r = fx.skipprd(kSync, postgres_env(pg, "no_such_db"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("database \"no_such_db\" does not exist"), std::string::npos) << r.err;
  EXPECT_FALSE(committed_anything(r)) << r.out;
}

TEST(PostgresPipeline, MergeByKeyIntoATableWithoutTheKeyColumnExitsTwoBeforeAnythingIsCommitted) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("nokey");
  pg.execute(db, "CREATE SCHEMA bike; CREATE TABLE bike.trips (id bigint PRIMARY KEY, station text)");
  PipelineFixture fx(sample_to_postgres_config(1000, 1, "merge_by_key"));
  auto r = fx.skipprd(kSync, postgres_env(pg, db));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("has no column \"trip_id\" named in the pipeline's primary_key"), std::string::npos) << r.err;
  EXPECT_FALSE(committed_anything(r)) << r.out;
}

TEST(PostgresPipeline, AnUnreachableServerExits75AndARerunDeliversEverything) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("down");
  PipelineFixture fx(sample_to_postgres_config(5000, 3));
  auto env = postgres_env(pg, db);
  env["PG_PORT"] = "1";  // nothing listens there: connection refused
  env["SINK_RETRY_SECONDS"] = "1";
  auto r = fx.skipprd(kSync, env);
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_TRUE(committed_anything(r)) << "the source should be read into the WAL while the sink is down";
  r = fx.skipprd(kSync, postgres_env(pg, db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = pg_trips_digest(pg, db);
  EXPECT_EQ(got.rows, "5000");
  EXPECT_EQ(got.distinct_ids, "5000");
}

TEST(PostgresPipeline, MergeByKeyAfterResetUpdatesRowsInPlace) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("merge");
  PipelineFixture fx(sample_to_postgres_config(3000, 5, "merge_by_key"));
  const auto env = postgres_env(pg, db);
  ASSERT_EQ(fx.skipprd(kSync, env).exit_code, 0);
  const auto first = pg_trips_digest(pg, db);
  EXPECT_EQ(first.rows, "3000");
  ASSERT_EQ(fx.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, env).exit_code, 0);
  auto r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg_trips_digest(pg, db), first);  // same rows again: merged, not appended
  EXPECT_EQ(pg.value(db, "SELECT count(DISTINCT epoch) FROM bike._skippr_batches"), "2");
}

}  // namespace
}  // namespace skippr::test
