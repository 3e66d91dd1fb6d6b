// The Redshift sink against tests/support/redshift_emulator.py: Redshift's wire protocol served by the real
// PostgreSQL server, COPY FROM 's3://' read from moto_server. A SIGKILL loop (DATA_DIR lost every fourth kill) with
// COMMIT answers dropped by the emulator ends with the table equal to an unkilled run's, each BatchId once in the
// ledger, and no staged object left in the bucket. merge_by_key, under the same faults, ends with each key's newest
// change: late upserts stay under newer deletes and older changes never overwrite newer ones.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>

#include "support/chaos_loop.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"
#include "support/redshift_emulator.h"
#include "support/sink_suite.h"

namespace skippr::test {
namespace {

constexpr const char* kRole = "arn:aws:iam::123456789012:role/skippr-load";

std::string redshift_config(uint64_t rows, uint64_t seed, const std::string& bucket, const std::string& role = kRole,
                            const std::string& landing = "append", const std::string& more_params = "") {
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
{}pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: {}
{})",
                     rows, seed, bucket, role, more_params, landing,
                     landing == "merge_by_key" ? "    primary_key: trip_id\n" : "");
}

std::map<std::string, std::string> redshift_env(const RedshiftEmulator& emulator, const std::string& db) {
  auto env = SharedMoto().env();
  for (const auto& [k, v] : postgres_env(SharedPostgres(), db)) env[k] = v;
  env["RS_PORT"] = std::to_string(emulator.port());
  return env;
}

// Redshift reads a backslash in a string literal as an escape; PostgreSQL, by default, does not. The emulator's
// sessions read them as Redshift does, so SQL right only on PostgreSQL fails here too.
TEST(Redshift, TheEmulatorReadsBackslashesInLiteralsAsRedshiftDoes) {
  RedshiftEmulator emulator(SharedPostgres(), SharedMoto().env());
  const std::string conninfo = fmt::format("host=127.0.0.1 port={} user={} password={} dbname=postgres",
                                           emulator.port(), PostgresServer::kUser, PostgresServer::kPassword);
  PGconn* conn = PQconnectdb(conninfo.c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  PGresult* r = PQexec(conn, R"(SELECT length('a\\b'), 'a_b' LIKE 'a\\_b', 'axb' LIKE 'a\\_b')");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(conn);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "3");  // a, one backslash, b
  EXPECT_STREQ(PQgetvalue(r, 0, 1), "t");
  EXPECT_STREQ(PQgetvalue(r, 0, 2), "f");
  PQclear(r);
  PQfinish(conn);
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

// A change log in JSON lines: `changes` changes of `keys` keys (insert, update or delete), spread over `files` files,
// each with an order token drawn without repeats from a shuffled range, so changes arrive out of their token order.
// Returns what the table must end as: per key the newest change, absent when that is a delete, as
// "id:v:n:order" sorted by id and joined by ','.
std::string write_change_log(const std::filesystem::path& dir, int files, int changes, int keys, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> tokens(changes);
  std::iota(tokens.begin(), tokens.end(), 1000);
  std::shuffle(tokens.begin(), tokens.end(), rng);
  struct Change {
    int64_t order = -1;
    bool deleted = false;
    std::string v;
    int64_t n = 0;
  };
  std::map<int, Change> newest;
  std::filesystem::create_directories(dir);
  for (int f = 0; f < files; ++f) {
    std::ofstream out(dir / fmt::format("part-{:03}.jsonl", f));
    for (int c = f; c < changes; c += files) {
      const int id = static_cast<int>(rng() % keys);
      const int dice = static_cast<int>(rng() % 10);
      const char* op = dice < 2 ? "delete" : dice < 5 ? "insert" : "update";
      const Change change{tokens[c], dice < 2, fmt::format("value-{}-{}", id, c), static_cast<int64_t>(rng() % 100000)};
      out << fmt::format(R"({{"id": {}, "_skippr_op": "{}", "_skippr_order": {}, "v": "{}", "n": {}}})", id, op,
                         change.order, change.v, change.n)
          << "\n";
      if (change.order > newest[id].order) newest[id] = change;
    }
  }
  std::vector<std::string> rows;
  for (const auto& [id, change] : newest) {
    if (!change.deleted) rows.push_back(fmt::format("{}:{}:{}:{}", id, change.v, change.n, change.order));
  }
  return fmt::format("{}", fmt::join(rows, ","));
}

std::string merge_config(const std::filesystem::path& dir, const std::string& bucket) {
  return fmt::format(R"(data_sources:
  changes:
    File: {{ path: "{}/*.jsonl", format: jsonl }}
data_sinks:
  warehouse:
    Redshift:
      host: 127.0.0.1
      port: ${{RS_PORT}}
      user: postgres
      password: "${{PG_PASSWORD}}"
      database: "${{PG_DATABASE}}"
      schema: Bike
      table: Changes
      s3_bucket: {}
      iam_role: "{}"
pipelines:
  changes:
    data_source: data_sources.changes
    data_sink: data_sinks.warehouse
    landing: merge_by_key
    primary_key: [ID]
)",
                     dir.string(), bucket, kRole);
}

std::string merged_table(const PostgresServer& pg, const std::string& db) {
  return pg.value(
      db,
      "SELECT coalesce(string_agg(id || ':' || v || ':' || n || ':' || _skippr_order, ',' ORDER BY id), '') "
      "FROM bike.changes");
}

TEST(Redshift, MergeByKeyKilledAndDroppedCommitsEndsWithEachKeysNewestChange) {
  auto& pg = SharedPostgres();
  const RedshiftEmulator emulator(pg, SharedMoto().env(), /*drop_commit_every=*/3);
  const auto db = pg.create_database("rsmerge");
  const std::string bucket = SharedMoto().create_bucket("merge");
  PipelineFixture f("");
  const std::string expected = write_change_log(f.path("log"), 6, 24000, 1500, 5);
  write_text(f.path("skippr.yml"), merge_config(f.path("log"), bucket));
  auto env = redshift_env(emulator, db);
  env["BUFFER_THRESHOLD_BYTES"] = "20000";
  const ChaosRuns runs = sync_until_done_under_chaos(
      f, "changes", env, /*seed_base=*/7300,
      {.max_runs = 300, .lose_data_dir_every = 4, .each_failpoint_in_turn = true, .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.summary() << "\n" << runs.failure;
  std::cout << "redshift merge: " << runs.summary() << ", " << emulator.dropped_commits()
            << " COMMIT answers dropped\n";
  EXPECT_GE(runs.kills, 15);
  EXPECT_GT(emulator.dropped_commits(), 0);
  EXPECT_EQ(merged_table(pg, db), expected);
  EXPECT_EQ(pg.value(db, "SELECT count(*) - count(DISTINCT batch_id) FROM bike._skippr_batches"), "0");
  EXPECT_NE(pg.value(db, "SELECT count(*) FROM bike.changes__skippr_tombstones"), "0");
  EXPECT_TRUE(SharedMoto().keys(bucket).empty()) << "staged objects left: " << SharedMoto().keys(bucket).size();

  // An unkilled run ends the same, and so does a rerun after RESET: every change is read again, and since the log
  // carries its own order tokens, each replayed change is as old as the one already applied and changes nothing.
  const RedshiftEmulator calm_emulator(pg, SharedMoto().env());
  const auto calm_db = pg.create_database("rsmergecalm");
  PipelineFixture calm("");
  write_change_log(calm.path("log"), 6, 24000, 1500, 5);
  write_text(calm.path("skippr.yml"), merge_config(calm.path("log"), SharedMoto().create_bucket("mergecalm")));
  auto calm_env = redshift_env(calm_emulator, calm_db);
  auto calm_run = calm.skipprd({"sync", "--pipeline", "changes", "--once"}, calm_env);
  ASSERT_EQ(calm_run.exit_code, 0) << calm_run.err;
  EXPECT_EQ(merged_table(pg, calm_db), expected);
  ASSERT_EQ(calm.skipprd({"query", "--sql", "RESET PIPELINE changes"}, calm_env).exit_code, 0);
  auto again = calm.skipprd({"sync", "--pipeline", "changes", "--once"}, calm_env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(merged_table(pg, calm_db), expected);
}

// Without change fields, a reread replaces each row by itself under a newer derived token.
TEST(Redshift, MergeByKeyWithoutChangeFieldsKeepsEachTripOnceAcrossAReset) {
  auto& pg = SharedPostgres();
  const RedshiftEmulator emulator(pg, SharedMoto().env());
  const auto db = pg.create_database("rsmergesample");
  PipelineFixture f(redshift_config(5000, 9, SharedMoto().create_bucket("mergesample"), kRole, "merge_by_key"));
  auto env = redshift_env(emulator, db);
  env["BUFFER_THRESHOLD_BYTES"] = "100000";
  auto first_run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(first_run.exit_code, 0) << first_run.err;
  const PgTripsDigest first = pg_trips_digest(pg, db);
  EXPECT_EQ(first.rows, "5000");
  EXPECT_EQ(first.distinct_ids, "5000");
  const std::string first_max = pg.value(db, "SELECT max(_skippr_order) FROM bike.trips");
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, env).exit_code, 0);
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(pg_trips_digest(pg, db), first);
  EXPECT_EQ(pg.value(db, fmt::format("SELECT count(*) FROM bike.trips WHERE _skippr_order <= {}", first_max)), "0")
      << "a row kept the older epoch's token";
}

// An upsert from a batch without some of the table's fields leaves those columns as they were; a later delete of a
// key, then an older insert of it, leaves it deleted.
TEST(Redshift, MergeByKeyKeepsColumnsABatchDoesNotCarry) {
  auto& pg = SharedPostgres();
  const RedshiftEmulator emulator(pg, SharedMoto().env());
  const auto db = pg.create_database("rsmergesparse");
  PipelineFixture f("");
  write_text(f.path("log/part-000.jsonl"),
             "{\"id\": 1, \"_skippr_order\": 10, \"v\": \"a\", \"n\": 100}\n"
             "{\"id\": 2, \"_skippr_order\": 11, \"v\": \"b\", \"n\": 200}\n");
  write_text(f.path("skippr.yml"), merge_config(f.path("log"), SharedMoto().create_bucket("mergesparse")));
  const auto env = redshift_env(emulator, db);
  auto run = f.skipprd({"sync", "--pipeline", "changes", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  write_text(f.path("log/part-001.jsonl"),
             "{\"id\": 1, \"_skippr_order\": 20, \"v\": \"a2\"}\n"
             "{\"id\": 2, \"_skippr_op\": \"delete\", \"_skippr_order\": 30}\n");
  run = f.skipprd({"sync", "--pipeline", "changes", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  write_text(f.path("log/part-002.jsonl"),
             "{\"id\": 2, \"_skippr_op\": \"insert\", \"_skippr_order\": 25, "
             "\"v\": \"late\", \"n\": 1}\n");
  run = f.skipprd({"sync", "--pipeline", "changes", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(merged_table(pg, db), "1:a2:100:20");
}

// A cluster in another region than the staging bucket: COPY needs REGION, which the sink's `region` gives. Without
// it the COPY fails as Redshift's does (S3's PermanentRedirect) and nothing lands; with it every row lands once.
TEST(Redshift, ACopyFromABucketInAnotherRegionCarriesTheSinksRegion) {
  auto& pg = SharedPostgres();
  const RedshiftEmulator emulator(pg, SharedMoto().env(), 0, "eu-west-1");
  const auto db = pg.create_database("rsregion");
  const std::string bucket = SharedMoto().create_bucket("region");  // us-east-1, as moto makes it
  PipelineFixture without(redshift_config(1000, 3, bucket));
  auto env = redshift_env(emulator, db);
  env["BUFFER_THRESHOLD_BYTES"] = "20000";
  auto refused = without.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  // The batches are committed: they wait in the WAL for a run with the region set (exit 2: waiting cannot fix it).
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("wait in the WAL"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("PermanentRedirect"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("set the sink's region"), std::string::npos) << refused.err;

  PipelineFixture with(redshift_config(1000, 3, bucket, kRole, "append", "      region: us-east-1\n"));
  auto landed = with.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  ASSERT_EQ(landed.exit_code, 0) << landed.err;
  const PgTripsDigest digest = pg_trips_digest(pg, db);
  EXPECT_EQ(digest.rows, "1000");
  EXPECT_EQ(digest.distinct_ids, "1000");
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

  PipelineFixture replace(redshift_config(100, 1, bucket, kRole, "replace_table"));
  r = replace.skipprd({"sync", "--pipeline", "bikehire", "--once"}, redshift_env(emulator, db));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("append and merge_by_key only"), std::string::npos) << r.err;
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'bike'"), "0")
      << "a refused configuration created tables";
}

// The sink suite (tests/support/sink_suite.h) on Redshift: an emulator of its own (no answers dropped; the test
// above drops them), a database and a staging bucket of its own.
const SinkUnderTest& redshift_under_test() {
  static const RedshiftEmulator emulator(SharedPostgres(), SharedMoto().env());
  static const SinkUnderTest sut = [] {
    const std::string db = SharedPostgres().create_database("rssuite");
    const std::string bucket = SharedMoto().create_bucket("rssuite");
    SinkUnderTest s;
    s.name = "Redshift";
    s.sink = [bucket](const std::string& table) {
      return fmt::format(
          R"(Redshift: {{ host: 127.0.0.1, port: "${{RS_PORT}}", user: postgres, password: )"
          R"("${{PG_PASSWORD}}", database: "${{PG_DATABASE}}", schema: bike, table: "{}", s3_bucket: {}, )"
          R"(iam_role: "{}" }})",
          table, bucket, kRole);
    };
    read_from_postgres(s, db, "bike");
    s.env = redshift_env(emulator, db);
    s.merges = true;
    s.lands_streams = true;
    // Each run connects and sets up for a second or more here: a wider timer spends fewer runs killed before then.
    s.kill_loop_rows = 40000;
    s.chaos_max_seconds = 4;
    s.after_landing = [bucket](const PipelineFixture&, const std::string&) {
      EXPECT_TRUE(SharedMoto().keys(bucket).empty()) << "staged objects left";
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(Redshift, redshift_under_test());

}  // namespace skippr::test
