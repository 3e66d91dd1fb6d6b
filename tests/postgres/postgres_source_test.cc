// The Postgres source (incremental by cursor + primary key) into the Postgres sink: rows sharing a cursor value across
// poll boundaries are neither lost nor doubled, new rows are picked up by the next run, values convert exactly.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/pipeline_fixture.h"
#include "support/postgres_server.h"

namespace skippr::test {
namespace {

const std::vector<std::string> kSync = {"sync", "--pipeline", "copy", "--once", "--output", "json"};

std::string source_config(const std::string& source_uri, const std::string& sink_uri, const std::string& extra = "",
                          const std::string& table = "events") {
  return fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [{}], cursor_column: updated_at{} }}
data_sinks:
  copy_db:
    Postgres: {{ dsn: "{}", schema: mirror, table: events }}
pipelines:
  copy:
    data_source: data_sources.app
    data_sink: data_sinks.copy_db
)",
                     source_uri, table, extra, sink_uri);
}

// Rows [first, last]: 100 rows share each updated_at value, so polls of 30 rows cut through every group.
std::string insert_events(int first, int last, const std::string& cursor_expr) {
  return fmt::format(
      "INSERT INTO shop.events SELECT i, {}, 'payload ' || i || ' é', (i * 1.25)::numeric(12,2), i % 2 = 0, "
      "date '2024-02-29' + i, jsonb_build_object('i', i, 'tags', jsonb_build_array('a', i)), "
      "decode(lpad(to_hex(i), 8, '0'), 'hex'), (i % 1000)::int, i / 3.0 FROM generate_series({}, {}) i",
      cursor_expr, first, last);
}

// The same text for a row in the source and in the copy, whatever the column types became.
std::string digest(const std::string& table) {
  return fmt::format(
      "SET TIME ZONE 'UTC'; SELECT count(*), count(DISTINCT id), md5(string_agg(concat_ws('|', id, updated_at, "
      "payload, amount::text, flag, day, doc::text, encode(blob, 'hex'), qty, ratio), ',' ORDER BY id)) FROM {}",
      table);
}

TEST(PostgresSource, IncrementalReadsRowsSharingACursorValueExactlyOnceAcrossPollsAndRuns) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("src");
  const auto dst = pg.create_database("dst");
  pg.execute(src,
             "CREATE SCHEMA shop; CREATE TABLE shop.events (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, "
             "payload text, amount numeric(12,2), flag boolean, day date, doc jsonb, blob bytea, qty integer, ratio "
             "double precision)");
  pg.execute(src, insert_events(1, 2500, "timestamptz '2024-03-01 00:00:00.5+00' + (i / 100) * interval '1 s'"));
  PipelineFixture fx(source_config(pg.uri(src), pg.uri(dst)));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "6000"}};  // ~30 rows a poll
  auto r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg.query(dst, digest("mirror.events")), pg.query(src, digest("shop.events")));
  // Far more batches than the 25 cursor groups: the cuts fell inside groups sharing a cursor value.
  EXPECT_GE(std::stoi(pg.value(dst, "SELECT count(*) FROM mirror._skippr_batches")), 40);

  // New rows at the very cursor value the last run ended on (higher keys), and later ones.
  pg.execute(src, insert_events(2501, 2550, "(SELECT max(updated_at) FROM shop.events)"));
  pg.execute(src, insert_events(2551, 2700, "timestamptz '2024-03-02 00:00:00+00' + (i / 100) * interval '1 s'"));
  r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = pg.query(dst, digest("mirror.events"));
  EXPECT_EQ(got.at(0).at(0), "2700");
  EXPECT_EQ(got.at(0).at(1), "2700");
  EXPECT_EQ(got, pg.query(src, digest("shop.events")));
  EXPECT_EQ(pg.value(dst,
                     "SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM "
                     "pg_attribute WHERE attrelid = 'mirror.events'::regclass AND attnum > 0"),
            "bigint,timestamp with time zone,text,text,boolean,date,jsonb,bytea,bigint,double precision");
}

TEST(PostgresSource, SnapshotReadsTheWholeTableOnceByKeyAndARerunReadsNothingMore) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("src");
  const auto dst = pg.create_database("dst");
  pg.execute(src,
             "CREATE SCHEMA shop; CREATE TABLE shop.events (id bigint PRIMARY KEY, updated_at timestamptz, payload "
             "text, amount numeric(12,2), flag boolean, day date, doc jsonb, blob bytea, qty integer, ratio float8)");
  // NULL cursors do not matter to a snapshot.
  pg.execute(src, insert_events(1, 700, "CASE WHEN i % 7 = 0 THEN NULL ELSE now() END"));
  PipelineFixture fx(source_config(pg.uri(src), pg.uri(dst), ", mode: snapshot"));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "20000"}};
  auto r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg.query(dst, digest("mirror.events")), pg.query(src, digest("shop.events")));
  pg.execute(src, insert_events(701, 710, "now()"));
  r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg.value(dst, "SELECT count(*) FROM mirror.events"), "700");
}

TEST(PostgresSource, AMissingTableExitsTwoWithOneSentenceBeforeAnythingIsCommitted) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("src");
  const auto dst = pg.create_database("dst");
  PipelineFixture fx(source_config(pg.uri(src), pg.uri(dst), "", "no_such_table"));
  auto r = fx.skipprd(kSync);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("source 'app': table \"shop\".\"no_such_table\" does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("\"batch_committed\""), std::string::npos) << r.out;
}

TEST(PostgresSource, AWrongPasswordExitsTwo) {
  auto& pg = SharedPostgres();
  const auto dst = pg.create_database("dst");
  std::string bad_uri = pg.uri("postgres");
  bad_uri.replace(bad_uri.find(PostgresServer::kPassword), std::string(PostgresServer::kPassword).size(), "wrong");
  PipelineFixture fx(source_config(bad_uri, pg.uri(dst)));
  auto r = fx.skipprd(kSync);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("source 'app': cannot connect to PostgreSQL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("password authentication failed"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace skippr::test
