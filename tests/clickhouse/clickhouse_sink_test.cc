// The ClickHouse sink against a real server: rows land with their identity, a batch that may have landed is asked
// about before it is sent again, the ReplacingMergeTree recipe folds a repeat, config mistakes stop with exit 2, and
// a SIGKILL loop ends with every row present and each repeat carrying the same identity as its first copy.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/connector.h"
#include "support/chaos_loop.h"
#include "support/clickhouse_server.h"
#include "support/pipeline_fixture.h"
#include "support/sink_suite.h"
#include "support/zookeeper_server.h"

namespace skippr::test {
namespace {

std::string sample_to_clickhouse(uint64_t rows, const std::string& database, const std::string& table,
                                 const std::string& extra = "") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 7 }}
data_sinks:
  ch:
    ClickHouse: {{ url: "{}", database: {}, table: {}{} }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.ch
)",
                     rows, SharedClickHouse().url(), database, table, extra);
}

// Every data column of the sample, hashed per row and summed: equal for two tables holding the same rows once.
std::string content_digest(const std::string& table) {
  return SharedClickHouse().query(fmt::format(
      "SELECT count(), uniqExact(trip_id), sum(cityHash64(toString(trip_id), toString(rider_id), toString(bike_id), "
      "toString(event_type), toString(event_time), toString(station), toString(duration_s), toString(firmware), "
      "toString(metadata))) FROM {} FINAL",
      table));
}

// A ClickHouse sink made and opened as the engine would, on `url`.
std::unique_ptr<Sink> open_sink(const std::string& url, const std::string& db, const std::string& table,
                                const std::string& engine) {
  const ConnectorSpec* spec = find_connector("ClickHouse", /*is_source=*/false);
  if (!spec) throw std::runtime_error("no ClickHouse sink");
  ConnectorContext ctx;
  ctx.name = "ch";
  ctx.pipeline = "p";
  ctx.params = {{"url", url},     {"database", db},   {"table", table},         {"user", "default"},
                {"password", ""}, {"engine", engine}, {"timeout_seconds", 30.0}};
  auto sink = spec->make_sink(ctx);
  if (!sink) throw std::runtime_error(sink.error().message);
  if (auto st = (*sink)->open(); !st) throw std::runtime_error(st.error().message);
  return std::move(*sink);
}

Batch thousand_rows() {
  Batch batch;
  batch.schema.fields = {{"id", Type::kInt64}, {"name", Type::kString}};
  batch.columns = {Column(Type::kInt64), Column(Type::kString)};
  for (int i = 0; i < 1000; ++i) {
    batch.columns[0].append_int(i);
    batch.columns[1].append_string(fmt::format("row {}", i));
  }
  batch.rows = 1000;
  return batch;
}

TEST(ClickHouseSink, LandsEveryRowWithItsIdentity) {
  auto& ch = SharedClickHouse();
  const std::string db = ch.fresh_database("lands");
  PipelineFixture f(sample_to_clickhouse(30000, db, "trips"));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "512KiB"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ch.query(fmt::format("SELECT count(), uniqExact(trip_id), uniqExact(_skippr_batch_id, _skippr_row), "
                                 "uniqExact(_skippr_batch_id) > 1 FROM {}.trips",
                                 db)),
            "30000\t30000\t30000\t1");
  EXPECT_NE(ch.query(fmt::format("SHOW CREATE TABLE {}.trips", db)).find("ReplacingMergeTree"), std::string::npos);
  // A new field becomes a new column (ALTER TABLE ADD COLUMN); the rows before it hold NULL there.
  ch.query(fmt::format("ALTER TABLE {}.trips DROP COLUMN firmware", db));
  PipelineFixture again(sample_to_clickhouse(100, db, "trips"));
  auto second = again.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(ch.query(fmt::format("SELECT count(), countIf(firmware IS NULL) FROM {}.trips", db)), "30100\t30000");
}

// Through the sink itself: a batch sent twice without the check repeats (each copy with the same identity) and
// FINAL folds it; with the check (maybe_landed) it is reported already applied and not sent.
TEST(ClickHouseSink, AsksBeforeResendingAndTheRecipeFoldsRepeats) {
  auto& ch = SharedClickHouse();
  const std::string db = ch.fresh_database("asks");
  auto sink = open_sink(ch.url(), db, "t", "ReplacingMergeTree ORDER BY (_skippr_batch_id, _skippr_row)");
  const Batch batch = thousand_rows();
  const BatchId id{"p", 1, 1, "0123456789abcdef0123456789abcdef"};
  const Position position;
  auto first = sink->write_group(std::vector<BatchToLand>{{batch, id, position, false}});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->front().outcome, WriteOutcome::kApplied);
  auto replay = sink->write_group(std::vector<BatchToLand>{{batch, id, position, true}});
  ASSERT_TRUE(replay) << replay.error().message;
  EXPECT_EQ(replay->front().outcome, WriteOutcome::kAlreadyApplied);
  EXPECT_EQ(ch.query(fmt::format("SELECT count() FROM {}.t", db)), "1000");
  // What a crash between the insert and that knowledge gives: the same rows again, with the same identity.
  auto repeat = sink->write_group(std::vector<BatchToLand>{{batch, id, position, false}});
  ASSERT_TRUE(repeat) << repeat.error().message;
  EXPECT_EQ(ch.query(fmt::format("SELECT count(), uniqExact(_skippr_batch_id, _skippr_row) FROM {}.t", db)),
            "2000\t1000");
  EXPECT_EQ(ch.query(fmt::format("SELECT count(), sum(id) FROM {}.t FINAL", db)), "1000\t499500");
}

TEST(ClickHouseSink, ConfigMistakesStopWithExitTwoAndNoSecret) {
  auto& ch = SharedClickHouse();
  const std::string db = ch.fresh_database("mistakes");
  PipelineFixture wrong_password(sample_to_clickhouse(10, db, "t", ", password: \"${CH_PASSWORD}\""));
  auto run = wrong_password.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"CH_PASSWORD", "s3cr3t-pw"}});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("password"), std::string::npos) << run.err;
  EXPECT_EQ((run.out + run.err).find("s3cr3t-pw"), std::string::npos);
  EXPECT_TRUE(files_containing(wrong_password.root(), "s3cr3t-pw").empty());

  PipelineFixture no_database(sample_to_clickhouse(10, "no_such_db", "t"));
  run = no_database.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("database no_such_db does not exist"), std::string::npos) << run.err;

  PipelineFixture merge(sample_to_clickhouse(10, db, "t") + "    landing: merge_by_key\n    primary_key: [trip_id]\n");
  run = merge.skipprd({"validate"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("not supported by ClickHouse"), std::string::npos) << run.err;

  // A server that is not there: retried, then exit 75 with nothing lost (the batch waits in the WAL).
  const std::string down = fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: 10, seed: 7 }}
data_sinks:
  ch:
    ClickHouse: {{ url: "http://127.0.0.1:{}", database: {}, table: t }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.ch
)",
                                       free_loopback_port(), db);
  PipelineFixture unreachable(down);
  run = unreachable.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SINK_RETRY_SECONDS", "2"}});
  EXPECT_EQ(run.exit_code, 75) << run.err;
}

TEST(ClickHouseSink, KillLoopLeavesEveryRowAndOnlyRecognisableRepeats) {
  auto& ch = SharedClickHouse();
  const std::string db = ch.fresh_database("chaos");
  constexpr uint64_t kRows = 600000;
  std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "64KiB"}, {"WAL_BYTES_PER_FILE", "1000000"}};
  PipelineFixture unkilled(sample_to_clickhouse(kRows, db, "unkilled"));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  PipelineFixture f(sample_to_clickhouse(kRows, db, "killed"));
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.05";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.4";
  const ChaosRuns runs = sync_until_done_under_chaos(f, "bikehire", env, 1600, {.min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 15) << runs.summary();

  // Every row is there; a row that is there twice has one identity (a repeat of one batch's row, never a row read
  // twice from the source into two batches); FINAL gives exactly the unkilled run's content.
  EXPECT_EQ(ch.query(fmt::format("SELECT uniqExact(trip_id) FROM {}.killed", db)), std::to_string(kRows));
  EXPECT_EQ(ch.query(fmt::format("SELECT count() FROM (SELECT trip_id, uniqExact(_skippr_batch_id, _skippr_row) AS "
                                 "identities FROM {}.killed GROUP BY trip_id HAVING identities > 1)",
                                 db)),
            "0");
  EXPECT_EQ(content_digest(db + ".killed"), content_digest(db + ".unkilled"));
  std::printf("[ metrics  ] rows=%llu plain_count=%s %s\n", static_cast<unsigned long long>(kRows),
              ch.query(fmt::format("SELECT count() FROM {}.killed", db)).c_str(), runs.summary().c_str());
}

// The second recipe: ReplicatedMergeTree (with ZooKeeper) drops a retried block identical to one it stored, so a
// plain count() is exact — a batch sent twice without the check (what a kill mid-insert gives) lands once, and a
// SIGKILL loop ends with exactly the unkilled run's rows.
TEST(ClickHouseSink, ReplicatedRecipeGivesAnExactPlainCount) {
  ZooKeeperServer zookeeper;
  ClickHouseServer ch(zookeeper.port());
  ch.query("CREATE DATABASE replicated");
  const std::string engine =
      ", engine: \"ReplicatedMergeTree('/clickhouse/tables/{database}/{table}', '{replica}') ORDER BY "
      "(_skippr_batch_id, _skippr_row)\"";
  auto config = [&](uint64_t rows, const std::string& table) {
    std::string text = sample_to_clickhouse(rows, "replicated", table, engine);
    const std::string shared_url = SharedClickHouse().url();
    text.replace(text.find(shared_url), shared_url.size(), ch.url());
    return text;
  };
  std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "64KiB"}, {"WAL_BYTES_PER_FILE", "1000000"}};
  constexpr uint64_t kRows = 300000;
  PipelineFixture unkilled(config(kRows, "unkilled"));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_NE(ch.query("SHOW CREATE TABLE replicated.unkilled").find("ReplicatedMergeTree"), std::string::npos);

  PipelineFixture f(config(kRows, "killed"));
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.05";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.4";
  const ChaosRuns runs = sync_until_done_under_chaos(f, "bikehire", env, 3600, {.min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 15) << runs.summary();
  EXPECT_EQ(ch.query("SELECT count(), uniqExact(trip_id) FROM replicated.killed"), fmt::format("{}\t{}", kRows, kRows));
  const std::string digest =
      "SELECT count(), sum(cityHash64(toString(trip_id), toString(rider_id), toString(event_time), toString(station), "
      "toString(duration_s), toString(metadata))) FROM replicated.";
  EXPECT_EQ(ch.query(digest + "killed"), ch.query(digest + "unkilled"));

  // The same batch twice, the second time without asking first (what a kill mid-insert gives): the server drops
  // the identical block.
  ch.query("CREATE DATABASE twice");
  auto sink = open_sink(ch.url(), "twice", "t",
                        "ReplicatedMergeTree('/clickhouse/tables/{database}/{table}', '{replica}') ORDER BY "
                        "(_skippr_batch_id, _skippr_row)");
  const Batch batch = thousand_rows();
  const BatchId id{"p", 1, 1, "0123456789abcdef0123456789abcdef"};
  const Position position;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto landed = sink->write_group(std::vector<BatchToLand>{{batch, id, position, false}});
    ASSERT_TRUE(landed) << landed.error().message;
  }
  EXPECT_EQ(ch.query("SELECT count(), sum(id) FROM twice.t"), "1000\t499500");
  std::printf("[ metrics  ] rows=%llu %s\n", static_cast<unsigned long long>(kRows), runs.summary().c_str());
}

// The sink suite (tests/support/sink_suite.h) on ClickHouse, read as its page says to read it: through FINAL, which
// folds the repeats an at-least-once landing may leave (the kill loop above counts those).
const SinkUnderTest& clickhouse_under_test() {
  static const SinkUnderTest sut = [] {
    const std::string db = SharedClickHouse().fresh_database("suite");
    SinkUnderTest s;
    s.name = "ClickHouse";
    s.lands_streams = true;
    s.sink = [db](const std::string& table) {
      return fmt::format(R"(ClickHouse: {{ url: "{}", database: {}, table: "{}" }})", SharedClickHouse().url(), db,
                         table);
    };
    s.rows = [db](const PipelineFixture&, const std::string& table, const std::vector<std::string>& columns) {
      std::string row;
      for (const auto& c : columns)
        row += fmt::format("{}ifNull(toString(`{}`), 'NULL')", row.empty() ? "" : ", '|', ", c);
      const std::string text =
          SharedClickHouse().query(fmt::format("SELECT concat({}) FROM {}.{} FINAL FORMAT TSVRaw", row, db, table));
      std::vector<std::string> out;
      for (size_t from = 0, end; from < text.size(); from = end + 1) {
        end = text.find('\n', from);
        if (end == std::string::npos) end = text.size();
        if (end > from) out.push_back(text.substr(from, end - from));
      }
      return out;
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(ClickHouse, clickhouse_under_test());

}  // namespace skippr::test
