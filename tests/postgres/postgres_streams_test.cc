// Streams into PostgreSQL: a File source of five stream folders lands each in a table of its own (table pattern
// s_{stream}), all of a batch's streams in one transaction. Under kill -9, with DATA_DIR lost between kills, every
// table ends equal to an unkilled run's, each row once; a pipeline of one stream keeps its table and ledger as before.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"
#include "support/stream_files.h"

namespace skippr::test {
namespace {

std::string streams_to_postgres_config() {
  return fmt::format(R"(data_sources:
  files:
    File: {{ path: "in/{{stream}}/*.jsonl" }}
data_sinks:
  warehouse:
{}pipelines:
  many:
    data_source: data_sources.files
    data_sink: data_sinks.warehouse
)",
                     postgres_sink_yaml("lake", "\"s_{stream}\""));
}

// rows | distinct ids | md5 of every row in id order, per stream's table.
std::map<std::string, std::string> pg_stream_digests(const PostgresServer& pg, const std::string& db) {
  std::map<std::string, std::string> out;
  for (const auto& stream : stream_names()) {
    out[stream] = pg.value(db, fmt::format("SELECT count(*) || '|' || count(DISTINCT id) || '|' || "
                                           "md5(string_agg(t::text, ',' ORDER BY id)) FROM lake.{} t",
                                           stream_table("s_", stream)));
  }
  return out;
}

TEST(PostgresStreams, EveryTableEqualsAnUnkilledRunUnderKill9AndLostDataDirs) {
  auto& pg = SharedPostgres();
  const auto clean_db = pg.create_database("streams");
  const auto chaos_db = pg.create_database("streams");
  PipelineFixture unkilled(streams_to_postgres_config());
  PipelineFixture chaos(streams_to_postgres_config());
  const auto rows = write_stream_files(unkilled.root(), 8, 3000);
  write_stream_files(chaos.root(), 8, 3000);
  std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "80000"}, {"WAL_BYTES_PER_FILE", "400000"}};

  auto clean_env = env;
  for (const auto& [k, v] : postgres_env(pg, clean_db)) clean_env[k] = v;
  auto clean = unkilled.skipprd({"sync", "--pipeline", "many", "--once"}, clean_env);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  // Batches that held several streams landed each of them in its table in one transaction: one ledger row per
  // (table, batch), and more than one table for some batch ids.
  EXPECT_EQ(pg.value(clean_db,
                     "SELECT count(*) FROM (SELECT 1 FROM lake._skippr_batches GROUP BY target_table, "
                     "batch_id HAVING count(*) > 1) d"),
            "0");
  EXPECT_NE(
      pg.value(clean_db, "SELECT max(n) FROM (SELECT count(*) AS n FROM lake._skippr_batches GROUP BY batch_id) d"),
      "1");

  auto chaos_env = env;
  for (const auto& [k, v] : postgres_env(pg, chaos_db)) chaos_env[k] = v;
  chaos_env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.1";
  chaos_env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.8";
  const auto runs = sync_until_done_under_chaos(chaos, "many", chaos_env, /*seed_base=*/5100,
                                                {.max_runs = 300, .lose_data_dir_every = 4, .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  std::cout << "postgres streams chaos: " << runs.summary() << "\n";
  EXPECT_GE(runs.kills, 15);
  EXPECT_GE(runs.data_dirs_lost, 2);

  const auto want = pg_stream_digests(pg, clean_db);
  const auto got = pg_stream_digests(pg, chaos_db);
  for (const auto& stream : stream_names()) {
    const std::string n = std::to_string(rows.at(stream));
    EXPECT_TRUE(want.at(stream).starts_with(n + "|" + n + "|")) << stream << ": " << want.at(stream);
    EXPECT_EQ(got.at(stream), want.at(stream)) << stream << " differs from the unkilled run (rows|ids|md5)";
  }
}

// Tables of schema shop: two with composite keys, one holding TOAST-sized values, one left out by exclude_tables.
void create_shop(const PostgresServer& pg, const std::string& db, int rows) {
  pg.execute(db, fmt::format(R"(CREATE SCHEMA shop;
CREATE TABLE shop.orders (region text, id int, amount numeric(12,2), updated_at bigint, PRIMARY KEY (region, id));
CREATE TABLE shop.order_lines (order_id int, line int, sku text, updated_at bigint, PRIMARY KEY (order_id, line));
CREATE TABLE shop.customers (id int PRIMARY KEY, name text, bio text, updated_at bigint);
CREATE TABLE shop.notes_internal (id int PRIMARY KEY, body text, updated_at bigint);
INSERT INTO shop.orders SELECT 'r' || (i % 3), i, i * 1.5, i FROM generate_series(1, {0}) i;
INSERT INTO shop.order_lines SELECT i / 4, i % 4, 'sku-' || i, i FROM generate_series(1, {0}) i;
INSERT INTO shop.customers SELECT i, 'c' || i, CASE WHEN i % 50 = 0 THEN repeat(md5(i::text), 400) END, i
  FROM generate_series(1, {0}) i;
INSERT INTO shop.notes_internal SELECT i, 'secret', i FROM generate_series(1, 10) i;)",
                             rows));
}

std::string shop_config(const std::string& uri, const std::string& mode, const std::string& tables,
                        const std::string& sink_uri) {
  return fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [{}], exclude_tables: ["notes_*"], mode: {}{} }}
data_sinks:
  mirror:
    Postgres: {{ dsn: "{}", schema: mirror, table: "m_{{stream}}" }}
pipelines:
  shop:
    data_source: data_sources.app
    data_sink: data_sinks.mirror
)",
                     uri, tables, mode, mode == "incremental" ? ", cursor_column: updated_at" : "", sink_uri);
}

// Each table's rows as text in key order: equal strings mean equal tables.
std::string pg_table_text(const PostgresServer& pg, const std::string& db, const std::string& table,
                          const std::string& columns, const std::string& order) {
  return pg.value(db, fmt::format("SELECT count(*) || ':' || coalesce(md5(string_agg(concat_ws('|', {}), ',' ORDER "
                                  "BY {})), '') FROM {}",
                                  columns, order, table));
}

void expect_mirrored(const PostgresServer& pg, const std::string& src, const std::string& dst) {
  EXPECT_EQ(pg_table_text(pg, dst, "mirror.m_orders", "region, id, amount, updated_at", "region, id"),
            pg_table_text(pg, src, "shop.orders", "region, id, amount, updated_at", "region, id"));
  EXPECT_EQ(pg_table_text(pg, dst, "mirror.m_order_lines", "order_id, line, sku", "order_id, line"),
            pg_table_text(pg, src, "shop.order_lines", "order_id, line, sku", "order_id, line"));
  EXPECT_EQ(pg_table_text(pg, dst, "mirror.m_customers", "id, name, bio", "id"),
            pg_table_text(pg, src, "shop.customers", "id, name, bio", "id"));
}

TEST(PostgresSourceTables, APatternReadsEveryTableIntoItsOwnTableAndExcludedOnesStayOut) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("shop");
  const auto dst = pg.create_database("mirror");
  create_shop(pg, src, 3000);
  PipelineFixture fx(shop_config(pg.uri(src), "snapshot", "\"*\"", pg.uri(dst)));
  auto run =
      fx.skipprd({"sync", "--log", "info", "--pipeline", "shop", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "100000"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_mirrored(pg, src, dst);
  EXPECT_EQ(pg.value(dst, "SELECT count(*) FROM pg_tables WHERE schemaname = 'mirror' AND tablename LIKE '%notes%'"),
            "0");
  EXPECT_NE(run.err.find("3 tables selected"), std::string::npos) << run.err;

  // A snapshot that finished reads nothing again.
  run = fx.skipprd({"sync", "--pipeline", "shop", "--once"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_mirrored(pg, src, dst);
}

TEST(PostgresSourceTables, IncrementalFollowsEachTableAndATableAddedLaterStartsFromItsBeginning) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("shop");
  const auto dst = pg.create_database("mirror");
  create_shop(pg, src, 2000);
  PipelineFixture fx(shop_config(pg.uri(src), "incremental", "orders, customers", pg.uri(dst)));
  auto run = fx.skipprd({"sync", "--pipeline", "shop", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "50000"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(pg.value(dst, "SELECT count(*) FROM mirror.m_orders"), "2000");
  EXPECT_EQ(pg.value(dst, "SELECT count(*) FROM pg_tables WHERE tablename = 'm_order_lines'"), "0");

  pg.execute(src,
             "INSERT INTO shop.orders SELECT 'r9', i, i, 100000 + i FROM generate_series(1, 500) i; "
             "INSERT INTO shop.customers SELECT i, 'late', NULL, 100000 + i FROM generate_series(5001, 5100) i");
  // order_lines joins the list: it is read from its start, the others go on from where they were.
  write_text(fx.path("skippr.yml"),
             shop_config(pg.uri(src), "incremental", "orders, customers, order_lines", pg.uri(dst)));
  run = fx.skipprd({"sync", "--pipeline", "shop", "--once"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_mirrored(pg, src, dst);

  // A table taken off the list stops: its rows stay, new ones are not read; the others go on.
  write_text(fx.path("skippr.yml"), shop_config(pg.uri(src), "incremental", "orders, customers", pg.uri(dst)));
  pg.execute(src,
             "INSERT INTO shop.order_lines VALUES (9999, 1, 'after', 200000); "
             "INSERT INTO shop.orders VALUES ('r9', 9999, 1, 200000)");
  run = fx.skipprd({"sync", "--pipeline", "shop", "--once"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(pg.value(dst, "SELECT count(*) FROM mirror.m_order_lines WHERE sku = 'after'"), "0");
  EXPECT_EQ(pg.value(dst, "SELECT count(*) FROM mirror.m_orders WHERE id = 9999"), "1");
}

TEST(PostgresSourceTables, ANameThatIsNoTableOrAPatternMatchingNoneExitsTwoNamingIt) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("shop");
  const auto dst = pg.create_database("mirror");
  create_shop(pg, src, 10);
  for (const auto& [tables, says] : {std::pair{"orders, nope", "table shop.nope does not exist"},
                                     std::pair{"orders, \"sales.*\"", "tables pattern 'sales.*' matches no table"}}) {
    PipelineFixture fx(shop_config(pg.uri(src), "snapshot", tables, pg.uri(dst)));
    auto run = fx.skipprd({"sync", "--pipeline", "shop", "--once"});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find(says), std::string::npos) << run.err;
    EXPECT_EQ(pg.value(dst, "SELECT count(*) FROM pg_tables WHERE schemaname = 'mirror'"), "0");
  }
}

// A snapshot of three tables into Postgres under kill -9, DATA_DIR lost between kills: each table equal to its
// source, each row once.
TEST(PostgresSourceTables, ASnapshotOfSeveralTablesIsExactUnderKill9) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("shop");
  const auto dst = pg.create_database("mirror");
  create_shop(pg, src, 60000);
  PipelineFixture fx(shop_config(pg.uri(src), "snapshot", "\"*\"", pg.uri(dst)));
  const auto runs = sync_until_done_under_chaos(fx, "shop",
                                                {{"BUFFER_THRESHOLD_BYTES", "100000"},
                                                 {"WAL_BYTES_PER_FILE", "400000"},
                                                 {"SKIPPR_CHAOS_MIN_SECONDS", "0.1"},
                                                 {"SKIPPR_CHAOS_MAX_SECONDS", "0.8"}},
                                                /*seed_base=*/5300, {.lose_data_dir_every = 4, .min_kills = 12});
  ASSERT_TRUE(runs.finished) << runs.failure;
  std::cout << "postgres tables chaos: " << runs.summary() << "\n";
  EXPECT_GE(runs.kills, 12);
  expect_mirrored(pg, src, dst);
}

}  // namespace
}  // namespace skippr::test
