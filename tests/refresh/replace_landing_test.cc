// The replace landings under SIGKILL, in DuckDB and Postgres, from the File source: replace_partition (partitions
// spanning several batches, a second sync replacing some of them and leaving the rest alone) and replace_table (a
// full refresh killed mid-sync: the old table stays whole until the sync ends, then the new one is there whole; a
// reader polling Postgres meanwhile never sees anything else). Every loop kills inside the landing and loses
// DATA_DIR now and then; the tables are compared with those of runs that were never killed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"
#include "support/postgres_server.h"

namespace skippr::test {
namespace {

using Rows = std::vector<std::vector<std::string>>;

// JSON lines of `days` (day, rows) into `file`, each row's id and value naming `version`, so replaced rows are told
// from their replacements.
void write_days(const std::filesystem::path& file, const std::vector<std::pair<std::string, int>>& days,
                const std::string& version) {
  std::string text;
  for (const auto& [day, rows] : days) {
    for (int i = 0; i < rows; ++i) {
      text += fmt::format(R"({{"day":"{}","id":"{}-{}-{:05}","v":"{}-{}"}})", day, day, version, i, version,
                          (i * 7919) % 1000);
      text += '\n';
    }
  }
  std::filesystem::create_directories(file.parent_path());
  write_text(file, text);
}

// Small batches, each landed on its own: a partition of 2,000 rows spans several batches, and a kill after the n-th
// landing is n batches into the sync.
std::map<std::string, std::string> small_batches() {
  return {{"BUFFER_THRESHOLD_BYTES", "8000"}, {"LANDING_GROUP_BATCHES", "1"}};
}

// Where a test's pipeline lands, and how the test reads it back.
struct Target {
  std::string name;
  std::function<std::string(const std::string& table)> sink_yaml;  // the data_sinks entry's body
  std::map<std::string, std::string> env;
  std::function<Rows(const PipelineFixture&, const std::string& sql)> query;
  std::function<std::string(const std::string& table)> qualified;
};

Target duckdb_target() {
  return {
      "DuckDB",
      [](const std::string& table) { return fmt::format("    DuckDB: {{ path: out.duckdb, table: {} }}\n", table); },
      {},
      [](const PipelineFixture& f, const std::string& sql) { return duckdb_rows(f.path("out.duckdb"), sql); },
      [](const std::string& table) { return table; }};
}

Target postgres_target() {
  PostgresServer& pg = SharedPostgres();
  const std::string database = pg.create_database("refresh");
  return {"Postgres", [](const std::string& table) { return postgres_sink_yaml("refresh", table); },
          postgres_env(pg, database),
          [&pg, database](const PipelineFixture&, const std::string& sql) {
            Rows rows;
            for (const auto& row : pg.query(database, sql)) {
              std::vector<std::string> text;
              for (const auto& value : row) text.push_back(value.value_or("NULL"));
              rows.push_back(std::move(text));
            }
            return rows;
          },
          [](const std::string& table) { return "refresh." + table; }};
}

std::string config(const Target& target, const std::string& table, const std::string& landing) {
  return fmt::format(R"(data_sources:
  files:
    File: {{ path: in/*.jsonl }}
data_sinks:
  db:
{}pipelines:
  p:
    data_source: data_sources.files
    data_sink: data_sinks.db
    landing: {}
{})",
                     target.sink_yaml(table), landing,
                     landing == "replace_partition" ? "    partition_by: [day]\n" : "");
}

// Per partition: rows, distinct ids, an md5 of every id and value in id order, and the versions seen.
Rows partitions(const Target& target, const PipelineFixture& f, const std::string& table) {
  return target.query(
      f, fmt::format("SELECT CAST(day AS VARCHAR), count(*), count(DISTINCT id), md5(string_agg(id || '|' || v, ',' "
                     "ORDER BY id)), min(split_part(v, '-', 1)), max(split_part(v, '-', 1)) FROM {} GROUP BY 1 "
                     "ORDER BY 1",
                     target.qualified(table)));
}

// (day, rows, version) of each partition; fails the test when a partition holds duplicates or mixed versions.
std::vector<std::tuple<std::string, int, std::string>> summary(const Rows& rows) {
  std::vector<std::tuple<std::string, int, std::string>> out;
  for (const auto& row : rows) {
    EXPECT_EQ(row[1], row[2]) << "partition " << row[0] << " holds a row twice";
    EXPECT_EQ(row[4], row[5]) << "partition " << row[0] << " mixes rows of two syncs";
    out.emplace_back(row[0], std::stoi(row[1]), row[4]);
  }
  return out;
}

ChaosRuns kill_loop(const PipelineFixture& f, const Target& target, int seed_base) {
  auto env = small_batches();
  env.insert(target.env.begin(), target.env.end());
  ChaosOptions options;
  options.min_kills = 8;
  options.lose_data_dir_every = 3;
  options.each_failpoint_in_turn = true;
  return sync_until_done_under_chaos(f, "p", env, seed_base, options);
}

ProcessResult sync_once(const PipelineFixture& f, const Target& target, std::map<std::string, std::string> env = {}) {
  for (const auto& [k, v] : small_batches()) env.emplace(k, v);
  env.insert(target.env.begin(), target.env.end());
  return f.skipprd({"sync", "--pipeline", "p", "--once", "--output", "text"}, env);
}

void replace_partition_under_kills(const Target& target) {
  SCOPED_TRACE(target.name);
  PipelineFixture killed(config(target, "daily", "replace_partition"));
  write_days(killed.path("in/a.jsonl"), {{"2026-11-01", 2000}, {"2026-11-02", 2000}, {"2026-11-03", 2000}}, "s1");
  const ChaosRuns first = kill_loop(killed, target, 100);
  ASSERT_TRUE(first.finished) << first.failure << " " << first.summary();
  EXPECT_GE(first.kills, 8) << first.summary();
  EXPECT_EQ(summary(partitions(target, killed, "daily")),
            (std::vector<std::tuple<std::string, int, std::string>>{
                {"2026-11-01", 2000, "s1"}, {"2026-11-02", 2000, "s1"}, {"2026-11-03", 2000, "s1"}}));

  // The second sync reads 11-02 again (fewer rows now) and a new day; 11-01 and 11-03 are not read.
  write_days(killed.path("in/b.jsonl"), {{"2026-11-02", 1500}, {"2026-11-04", 1200}}, "s2");
  const ChaosRuns second = kill_loop(killed, target, 200);
  ASSERT_TRUE(second.finished) << second.failure << " " << second.summary();
  EXPECT_GE(second.kills, 8) << second.summary();
  const Rows got = partitions(target, killed, "daily");
  EXPECT_EQ(summary(got), (std::vector<std::tuple<std::string, int, std::string>>{{"2026-11-01", 2000, "s1"},
                                                                                  {"2026-11-02", 1500, "s2"},
                                                                                  {"2026-11-03", 2000, "s1"},
                                                                                  {"2026-11-04", 1200, "s2"}}));

  // The same two syncs, never killed, land the same content; their batches show each partition spans several.
  const Target calm_target = target.name == "Postgres" ? postgres_target() : duckdb_target();
  PipelineFixture calm(config(calm_target, "daily", "replace_partition"));
  write_days(calm.path("in/a.jsonl"), {{"2026-11-01", 2000}, {"2026-11-02", 2000}, {"2026-11-03", 2000}}, "s1");
  auto r1 = sync_once(calm, calm_target);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  write_days(calm.path("in/b.jsonl"), {{"2026-11-02", 1500}, {"2026-11-04", 1200}}, "s2");
  auto r2 = sync_once(calm, calm_target);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_NE(r2.out.find("2700 landed"), std::string::npos) << r2.out;
  EXPECT_EQ(got, partitions(calm_target, calm, "daily"));
  const auto batches =
      calm_target.query(calm, fmt::format("SELECT count(*) FROM {}",
                                          target.name == "Postgres" ? "refresh._skippr_batches" : "_skippr_batches"));
  EXPECT_GE(std::stoi(batches.at(0).at(0)), 4 * 3) << "each partition should span several batches";
}

TEST(ReplacePartition, DuckDbPartitionsEqualWhatTheLastSyncReadUnderKills) {
  replace_partition_under_kills(duckdb_target());
}

TEST(ReplacePartition, PostgresPartitionsEqualWhatTheLastSyncReadUnderKills) {
  replace_partition_under_kills(postgres_target());
}

// Rows and an md5 over the whole table in id order: what a reader sees.
std::string table_digest(const Target& target, const PipelineFixture& f, const std::string& table) {
  const Rows rows = target.query(f, fmt::format("SELECT count(*), count(DISTINCT id), md5(string_agg(id || '|' || v, "
                                                "',' ORDER BY id)) FROM {}",
                                                target.qualified(table)));
  return fmt::format("{} rows, {} ids, {}", rows.at(0).at(0), rows.at(0).at(1), rows.at(0).at(2));
}

void replace_table_killed_mid_refresh(const Target& target, bool poll_readers) {
  SCOPED_TRACE(target.name);
  PipelineFixture f(config(target, "refreshed", "replace_table"));
  write_days(f.path("in/a.jsonl"), {{"2026-11-01", 1500}, {"2026-11-02", 1500}}, "t1");
  auto first = sync_once(f, target);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string old_table = table_digest(target, f, "refreshed");
  EXPECT_TRUE(old_table.starts_with("3000 rows, 3000 ids")) << old_table;

  // The source's content changes: a.jsonl is gone, c.jsonl is new.
  std::filesystem::remove(f.path("in/a.jsonl"));
  write_days(f.path("in/c.jsonl"), {{"2026-11-05", 2000}, {"2026-11-06", 1800}}, "t2");

  // Killed after the third batch of the refresh committed: the target is the old table whole, the refresh table
  // holds what the sync landed so far.
  auto env = small_batches();
  env.insert(target.env.begin(), target.env.end());
  auto mid = f.skipprd({"sync", "--pipeline", "p", "--once"}, armed_at(env, "sink.after_commit", 3));
  ASSERT_EQ(mid.exit_code, 137) << mid.err;
  EXPECT_EQ(table_digest(target, f, "refreshed"), old_table);
  const Rows staged =
      target.query(f, fmt::format("SELECT count(*) FROM {}", target.qualified("refreshed__skippr_refresh")));
  EXPECT_GT(std::stoi(staged.at(0).at(0)), 0);
  EXPECT_LT(std::stoi(staged.at(0).at(0)), 3800);

  // Readers while the refresh goes on under kills (Postgres serves them meanwhile; DuckDB locks its file).
  std::atomic<bool> done{false};
  std::set<std::string> seen;
  std::thread reader;
  if (poll_readers) {
    reader = std::thread([&] {
      while (!done) {
        seen.insert(table_digest(target, f, "refreshed"));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  const ChaosRuns runs = kill_loop(f, target, 300);
  done = true;
  if (reader.joinable()) reader.join();
  ASSERT_TRUE(runs.finished) << runs.failure << " " << runs.summary();
  EXPECT_GE(runs.kills, 8) << runs.summary();
  const std::string new_table = table_digest(target, f, "refreshed");
  EXPECT_TRUE(new_table.starts_with("3800 rows, 3800 ids")) << new_table;
  EXPECT_EQ(summary(partitions(target, f, "refreshed")), (std::vector<std::tuple<std::string, int, std::string>>{
                                                             {"2026-11-05", 2000, "t2"}, {"2026-11-06", 1800, "t2"}}));
  if (poll_readers) {
    EXPECT_GE(seen.size(), 1u);
    for (const auto& view : seen) {
      EXPECT_TRUE(view == old_table || view == new_table) << "a reader saw a half-refreshed table: " << view;
    }
  }

  // A run never killed lands the same table; another sync of the same files refreshes it to the same content.
  const Target calm_target = target.name == "Postgres" ? postgres_target() : duckdb_target();
  PipelineFixture calm(config(calm_target, "refreshed", "replace_table"));
  write_days(calm.path("in/c.jsonl"), {{"2026-11-05", 2000}, {"2026-11-06", 1800}}, "t2");
  auto calm_run = sync_once(calm, calm_target);
  ASSERT_EQ(calm_run.exit_code, 0) << calm_run.err;
  EXPECT_EQ(new_table, table_digest(calm_target, calm, "refreshed"));
  auto again = sync_once(f, target);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("3800 landed"), std::string::npos) << again.out;
  EXPECT_EQ(table_digest(target, f, "refreshed"), new_table);
  EXPECT_TRUE(target
                  .query(f, fmt::format("SELECT table_name FROM information_schema.tables WHERE table_name = "
                                        "'refreshed__skippr_refresh'"))
                  .empty())
      << "the refresh table is dropped with the swap";
}

TEST(ReplaceTable, DuckDbKilledMidRefreshKeepsTheOldTableWholeThenHasTheNewOneWhole) {
  replace_table_killed_mid_refresh(duckdb_target(), /*poll_readers=*/false);
}

TEST(ReplaceTable, PostgresReadersSeeTheOldTableOrTheNewOneWholeThroughKills) {
  replace_table_killed_mid_refresh(postgres_target(), /*poll_readers=*/true);
}

// A source that reads nothing any more: the refreshed table is empty (a full refresh says what the source holds),
// when the pipeline says an empty source is expected; otherwise the sync is refused and the table stays
// (tests/refresh/empty_replace_test.cc).
TEST(ReplaceTable, ASyncThatReadsNothingEmptiesTheTable) {
  const Target target = duckdb_target();
  PipelineFixture f(config(target, "refreshed", "replace_table") + "    allow_empty_replace: true\n");
  write_days(f.path("in/a.jsonl"), {{"2026-11-01", 300}}, "t1");
  ASSERT_EQ(sync_once(f, target).exit_code, 0);
  EXPECT_TRUE(table_digest(target, f, "refreshed").starts_with("300 rows"));
  std::filesystem::remove(f.path("in/a.jsonl"));
  auto r = sync_once(f, target);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(target.query(f, "SELECT count(*) FROM refreshed").at(0).at(0), "0");
}

// Rows without the partition field are the NULL partition whichever batch they come in: a batch with none that has
// it (here the first three, before the table has the column) lands as the rows would beside rows that have it,
// instead of stopping the pipeline (it used to exit 75 on every run). A later sync replaces the NULL partition alone.
void rows_without_the_partition_field_land_in_the_null_partition(const Target& target) {
  SCOPED_TRACE(target.name);
  PipelineFixture f(config(target, "daily", "replace_partition"));
  std::string text;
  for (int i = 0; i < 1000; ++i) text += fmt::format(R"({{"id":"none-{:05}","v":"n1-{}"}})", i, i) + "\n";
  write_text(f.path("in/a.jsonl"), text);
  write_days(f.path("in/b.jsonl"), {{"2026-11-01", 300}}, "s1");
  auto first = sync_once(f, target);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("1300 landed"), std::string::npos) << first.out;
  EXPECT_EQ(summary(partitions(target, f, "daily")),
            (std::vector<std::tuple<std::string, int, std::string>>{{"2026-11-01", 300, "s1"}, {"NULL", 1000, "n1"}}));

  text.clear();
  for (int i = 0; i < 120; ++i) text += fmt::format(R"({{"id":"none-{:05}","v":"n2-{}"}})", i, i) + "\n";
  write_text(f.path("in/c.jsonl"), text);
  auto second = sync_once(f, target);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(summary(partitions(target, f, "daily")),
            (std::vector<std::tuple<std::string, int, std::string>>{{"2026-11-01", 300, "s1"}, {"NULL", 120, "n2"}}));
}

TEST(ReplacePartition, DuckDbRowsWithoutThePartitionFieldLandInTheNullPartitionWhereverBatchesAreCut) {
  rows_without_the_partition_field_land_in_the_null_partition(duckdb_target());
}

TEST(ReplacePartition, PostgresRowsWithoutThePartitionFieldLandInTheNullPartitionWhereverBatchesAreCut) {
  rows_without_the_partition_field_land_in_the_null_partition(postgres_target());
}

TEST(ReplaceLandings, MistakesStopAtLoadTimeWithFileAndLine) {
  const Target target = duckdb_target();
  {
    PipelineFixture f(config(target, "daily", "replace_partition"));
    std::string yaml = read_text(f.path("skippr.yml"));
    yaml.erase(yaml.find("    partition_by: [day]\n"), 24);
    write_text(f.path("skippr.yml"), yaml);
    auto r = f.skipprd({"validate"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("skippr.yml:8:3:"), std::string::npos) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("replace_partition needs the columns that make a partition; add partition_by"),
              std::string::npos)
        << r.out << r.err;
  }
  {
    PipelineFixture f(config(target, "daily", "append") + "    partition_by: [day]\n");
    auto r = f.skipprd({"validate"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("partition_by is used by landing replace_partition only"), std::string::npos)
        << r.out << r.err;
  }
  {
    // A sink without the landing says so at load time.
    PipelineFixture f(R"(data_sources:
  files: { File: { path: in/*.jsonl } }
data_sinks:
  out: { File: { path: out } }
pipelines:
  p: { data_source: files, data_sink: out, landing: replace_table }
)");
    auto r = f.skipprd({"validate"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("replace_table"), std::string::npos) << r.out << r.err;
  }
  {
    // A source that streams never finishes a sync.
    PipelineFixture f(R"(data_sources:
  web: { HttpServer: { listen_address: "127.0.0.1:0", allow_unauthenticated: true } }
data_sinks:
  db: { DuckDB: { path: out.duckdb, table: t } }
pipelines:
  p: { data_source: web, data_sink: db, landing: replace_table }
)");
    auto r = f.skipprd({"sync", "--pipeline", "p", "--once"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("streams without ever finishing a pass"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
  }
}

}  // namespace
}  // namespace skippr::test
