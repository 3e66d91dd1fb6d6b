// skipprd sync into a real PostgreSQL: every row once, reruns add nothing, and a user's mistake stops the run with
// exit 2 and one clear sentence before anything is committed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "core/redact.h"
#include "support/duckdb_probe.h"
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
  // A first sync must learn what the destination holds before it reads: it waits, reads nothing, exits 75.
  auto r = fx.skipprd(kSync, env);
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("nothing was read from the source"), std::string::npos) << r.err;
  EXPECT_FALSE(committed_anything(r)) << r.out;
  // libpq's own question is asked once, on one line, and ours is not added to it.
  const auto error_line = r.err.substr(r.err.find("error: "));
  EXPECT_NE(error_line.find("Connection refused. Is the server running on that host and accepting TCP/IP "
                            "connections? The run is retried"),
            std::string::npos)
      << error_line;
  EXPECT_EQ(error_line.find("Is the server running and reachable"), std::string::npos) << error_line;
  // A pipeline with a state (here made by RESET) reads into the WAL while the sink is down.
  ASSERT_EQ(fx.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, env).exit_code, 0);
  r = fx.skipprd(kSync, env);
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

namespace skippr::test {
namespace {

// File in/*.jsonl -> Postgres table `table` of schema raw.
std::string files_to_postgres(const std::string& table) {
  return fmt::format(R"(data_sources:
  inbox:
    File: {{ path: "in/*.jsonl" }}
data_sinks:
  warehouse:
{}pipelines:
  orders:
    data_source: data_sources.inbox
    data_sink: data_sinks.warehouse
)",
                     postgres_sink_yaml("raw", table));
}

const std::vector<std::string> kSyncOrders = {"sync", "--pipeline", "orders", "--once", "--log", "info"};

std::string pg_ids(const PostgresServer& pg, const std::string& db, const std::string& table) {
  return pg.value(db, fmt::format("SELECT string_agg(id::text, ',' ORDER BY id) FROM raw.{}", table));
}

// Issue 11's reproduction into Postgres: a lost DATA_DIR used to start again at epoch 1 seq 1, collide with the
// ledger, and skip the new rows with exit 0. Now the ledger's position resumes the File source: nothing lost, nothing
// twice.
TEST(PostgresFreshDataDir, ALostDataDirResumesWhereTheLedgerStandsAndSkipsNothing) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("fresh");
  PipelineFixture fx(files_to_postgres("orders"));
  const auto env = postgres_env(pg, db);
  write_text(fx.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  auto r = fx.skipprd(kSyncOrders, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::filesystem::remove_all(fx.path("data"));
  write_text(fx.path("in/c.jsonl"), "{\"id\":3}\n{\"id\":4}\n");
  r = fx.skipprd(kSyncOrders, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the source resumes after that batch"), std::string::npos) << r.err;
  EXPECT_EQ(pg_ids(pg, db, "orders"), "1,2,3,4");
  EXPECT_EQ(pg.value(db, "SELECT count(DISTINCT lineage) FROM raw._skippr_batches"), "2");
  EXPECT_EQ(pg.value(db, "SELECT sum(\"rows\") FROM raw._skippr_batches"), "4");
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM raw._skippr_batches WHERE position_after IS NULL"), "0");
}

// CDC cannot go back to a position an earlier DATA_DIR committed (the slot has moved on): a lost DATA_DIR says so
// and reads the table again from a fresh snapshot, and the merge_by_key mirror ends equal to the source (rows
// deleted meanwhile included: the snapshot's end removes what it did not read again).
TEST(PostgresFreshDataDir, ALostDataDirRereadsACdcSourceAndTheMirrorEqualsTheSource) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("cdcsrc");
  pg.execute(src,
             "CREATE SCHEMA shop; CREATE TABLE shop.items (id int PRIMARY KEY, name text); INSERT INTO "
             "shop.items SELECT i, 'n' || i FROM generate_series(1, 50) i");
  PipelineFixture fx(fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [items], mode: snapshot_then_cdc }}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: items }}
pipelines:
  mirror:
    data_source: data_sources.app
    data_sink: data_sinks.db
    landing: merge_by_key
    primary_key: [id]
)",
                                 pg.uri(src)));
  const std::vector<std::string> sync = {"sync", "--pipeline", "mirror", "--once", "--log"};
  auto r = fx.skipprd(sync);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::filesystem::remove_all(fx.path("data"));
  pg.execute(src,
             "DELETE FROM shop.items WHERE id <= 10; UPDATE shop.items SET name = 'changed' WHERE id = 20; "
             "INSERT INTO shop.items VALUES (51, 'new')");
  r = fx.skipprd(sync);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot go back to a position committed elsewhere"), std::string::npos) << r.err;
  const std::string expected = pg.value(src, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM shop.items");
  EXPECT_EQ(duckdb_value(fx.path("out.duckdb"), "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM items"),
            expected);
  pg.execute(src,
             "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '" + src + "'");
}

// One ledger per schema served every table: a batch of t_a made t_b skip (t_b was never even created).
TEST(PostgresFreshDataDir, TheLedgerAnswersPerTable) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("twotables");
  PipelineFixture fx(files_to_postgres("t_a"));
  const auto env = postgres_env(pg, db);
  write_text(fx.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n");
  ASSERT_EQ(fx.skipprd(kSyncOrders, env).exit_code, 0);
  write_text(fx.path("skippr.yml"), files_to_postgres("t_b"));
  std::filesystem::remove_all(fx.path("data"));
  auto r = fx.skipprd(kSyncOrders, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg_ids(pg, db, "t_a"), "1,2");
  EXPECT_EQ(pg_ids(pg, db, "t_b"), "1,2");
}

// A first-format ledger (batch_id alone as the key) is migrated on open, keeping its rows and its answers.
TEST(PostgresFreshDataDir, AFirstFormatLedgerIsMigratedOnOpen) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("migrate");
  pg.execute(db,
             "CREATE SCHEMA raw; CREATE TABLE raw._skippr_batches (batch_id text PRIMARY KEY, pipeline text, epoch "
             "bigint, seq bigint, target_table text, \"rows\" bigint, landed_at timestamptz DEFAULT now()); "
             "INSERT INTO raw._skippr_batches (batch_id, pipeline, epoch, seq, target_table, \"rows\") VALUES "
             "('orders/1/1', 'orders', 1, 1, '\"raw\".\"orders\"', 2); CREATE TABLE raw.orders (id bigint); "
             "INSERT INTO raw.orders VALUES (1), (2)");
  PipelineFixture fx(files_to_postgres("orders"));
  write_text(fx.path("in/c.jsonl"), "{\"id\":3}\n");
  auto r = fx.skipprd(kSyncOrders, postgres_env(pg, db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("without a source position"), std::string::npos) << r.err;
  EXPECT_EQ(pg_ids(pg, db, "orders"), "1,2,3");
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM raw._skippr_batches"), "2");
  EXPECT_EQ(pg.value(db, "SELECT max(epoch) FROM raw._skippr_batches"), "2");
  EXPECT_EQ(pg.value(db,
                     "SELECT string_agg(a.attname, ',' ORDER BY a.attnum) FROM pg_index i JOIN pg_attribute a ON "
                     "a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = "
                     "'raw._skippr_batches'::regclass AND i.indisprimary"),
            "target_table,batch_id");
}

}  // namespace
}  // namespace skippr::test

namespace skippr::test {
namespace {

std::string sample_to_postgres_dsn(const std::string& dsn_or_params) {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: 100 }}
data_sinks:
  warehouse:
    Postgres: {{ {}, table: t }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
)",
                     dsn_or_params);
}

// Issue 11, item 6: a password with URL-special characters (a malformed %-escape included) never appears in stderr,
// in the JSON error event or in DATA_DIR; a malformed dsn, a port out of range and an unknown sslmode are config
// errors (exit 2, found by validate too), not "is the server running?" (75).
TEST(PostgresSecrets, NoPasswordAppearsInAnyMessageOrFileAndMalformedConnectionsAreConfigErrors) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("secrets");
  const std::string port = std::to_string(pg.port());
  struct Case {
    std::string params;
    std::string secret;  // must appear nowhere
    std::string words;   // in the message
  };
  const std::vector<Case> cases = {
      {"dsn: \"postgresql://postgres:s3cr%zzet!@127.0.0.1:" + port + "/" + db + "\"", "s3cr%zzet!",
       "dsn is not a valid"},
      {"dsn: \"postgresql://postgres:Pw%40rd%7Cx@127.0.0.1:99999/" + db + "\"", "Pw%40rd%7Cx", "is not a TCP port"},
      {"dsn: \"host=127.0.0.1 port=" + port + " password='k3y?&=#' sslmode=sometimes dbname=" + db + "\"", "k3y?&=#",
       "sslmode 'sometimes'"},
      {"host: 127.0.0.1, port: " + port + ", user: postgres, password: \"wr0ng:p@ss/w?rd&%41\", database: " + db,
       "wr0ng:p@ss/w?rd&%41", "password authentication failed"},
  };
  for (const auto& c : cases) {
    PipelineFixture fx(sample_to_postgres_dsn(c.params));
    const bool found_at_load = c.words != "password authentication failed";
    auto validated = fx.skipprd({"validate"});
    EXPECT_EQ(validated.exit_code, found_at_load ? 2 : 0) << c.params << "\n" << validated.err;
    auto r = fx.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "json", "--log", "debug"});
    EXPECT_EQ(r.exit_code, 2) << c.params << "\n" << r.err;
    EXPECT_NE(r.err.find(c.words), std::string::npos) << r.err;
    for (const std::string& text : {validated.out, validated.err, r.out, r.err}) {
      EXPECT_EQ(text.find(c.secret), std::string::npos) << "the secret leaked: " << text;
      EXPECT_EQ(text.find(percent_decode(c.secret)), std::string::npos) << text;
    }
    EXPECT_TRUE(files_containing(fx.path("data"), c.secret).empty());
    if (found_at_load) {
      EXPECT_FALSE(std::filesystem::exists(fx.path("data")));
    }
  }
}

}  // namespace
}  // namespace skippr::test
