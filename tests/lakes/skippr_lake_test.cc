// SkipprLake (an Iceberg v2 table) through the real binary, read back by an independent reader (icebird): under
// SIGKILLs, with DATA_DIR lost between kills, on a folder and on S3 (moto_server), every row is in the table once
// with the content of an unkilled run, and every BatchId is in exactly one snapshot's summary. Two writers racing
// on one table both commit everything, on a linear snapshot lineage. Config mistakes stop the run with exit 2.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/failpoint.h"
#include "support/chaos_loop.h"
#include "support/iceberg_reader.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"
#include "support/sink_suite.h"

namespace skippr::test {
namespace {

// max_snapshots is raised so that every snapshot stays in the metadata, where the tests count BatchIds.
std::string sample_to_lake_config(uint64_t rows, uint64_t seed, const std::string& path,
                                  const std::string& pipeline = "bikehire", const std::string& more = "") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: {} }}
data_sinks:
  lake:
    SkipprLake: {{ path: "{}", table: trips, max_snapshots: 100000{} }}
pipelines:
  {}:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)",
                     rows, seed, path, more, pipeline);
}

std::string file_url(const std::filesystem::path& table) { return "file://" + table.string(); }

// The version hint names the newest vN.metadata.json: most readers (icebird, DuckDB's iceberg_scan) open the hinted
// version alone, and a hint left behind hides the commits after it from them.
void expect_hint_names_the_newest_version(const std::filesystem::path& table) {
  EXPECT_EQ(read_text(table / "metadata" / "version-hint.text"), std::to_string(iceberg_newest_version(table)))
      << table;
}

// Each BatchId in exactly one snapshot, and the snapshots' added records add up to `rows`.
void expect_each_batch_in_one_snapshot(const nlohmann::json& metadata, uint64_t rows) {
  ASSERT_TRUE(metadata.is_object());
  const auto ids = iceberg_snapshot_batch_ids(metadata);
  const std::set<std::string> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), ids.size()) << "a BatchId is in more than one snapshot";
  EXPECT_FALSE(ids.empty());
  uint64_t added = 0;
  for (const auto& s : metadata["snapshots"]) added += std::stoull(s["summary"].value("added-records", "0"));
  EXPECT_EQ(added, rows);
}

// Sequence numbers 1..N, each snapshot's parent the one before: one line of history, no fork.
void expect_linear_lineage(const nlohmann::json& metadata) {
  std::map<int64_t, const nlohmann::json*> by_seq;
  for (const auto& s : metadata["snapshots"]) by_seq[s["sequence-number"].get<int64_t>()] = &s;
  ASSERT_EQ(by_seq.size(), metadata["snapshots"].size());
  int64_t expected_seq = 1;
  std::optional<int64_t> previous;
  for (const auto& [seq, s] : by_seq) {
    EXPECT_EQ(seq, expected_seq++);
    if (previous) {
      EXPECT_EQ((*s)["parent-snapshot-id"].get<int64_t>(), *previous) << "snapshot " << seq;
    } else {
      EXPECT_FALSE(s->contains("parent-snapshot-id"));
    }
    previous = (*s)["snapshot-id"].get<int64_t>();
  }
  EXPECT_EQ(metadata["current-snapshot-id"].get<int64_t>(), *previous);
}

TEST(SkipprLake, EveryRowLandsOnceOnAFolderUnderKillsAndDataDirLoss) {
  constexpr uint64_t kRows = 200000;
  TempDir lakes;
  std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "128KiB"}, {"WAL_BYTES_PER_FILE", "500000"}};
  PipelineFixture unkilled(sample_to_lake_config(kRows, 5, (lakes / "unkilled").string()));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  PipelineFixture f(sample_to_lake_config(kRows, 5, (lakes / "killed").string()));
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.2";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.9";
  const ChaosRuns runs = sync_until_done_under_chaos(f, "bikehire", env, 1500,
                                                     {.lose_data_dir_every = 4,
                                                      .each_failpoint_in_turn = true,
                                                      .extra_failpoints = {failpoint::kLakeBeforeVersionHint},
                                                      .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 15) << runs.summary();
  EXPECT_GE(runs.data_dirs_lost, 3) << runs.summary();
  EXPECT_GE(runs.by_cause.count(std::string(failpoint::kLakeBeforeVersionHint)), 1u) << runs.summary();

  expect_hint_names_the_newest_version(lakes / "killed" / "trips");
  const IcebergDigest want = icebird_digest({file_url(lakes / "unkilled" / "trips")}, "trip_id");
  const IcebergDigest got = icebird_digest({file_url(lakes / "killed" / "trips")}, "trip_id");
  ASSERT_TRUE(want.error.empty()) << want.error;
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_EQ(want.rows, kRows);
  EXPECT_EQ(want.distinct_keys, kRows);
  EXPECT_EQ(got.rows, kRows);
  EXPECT_EQ(got.distinct_keys, kRows);
  EXPECT_EQ(got.hash, want.hash);
  expect_each_batch_in_one_snapshot(iceberg_current_metadata(lakes / "killed" / "trips"), kRows);
  expect_linear_lineage(iceberg_current_metadata(lakes / "killed" / "trips"));
  std::printf("[ metrics  ] rows=%llu snapshots=%d %s\n", static_cast<unsigned long long>(kRows), got.snapshots,
              runs.summary().c_str());
}

// Partitioned by day: each batch's rows go to one data file per day it spans.
constexpr const char* kDaily = ", partition_by: [\"day(event_time)\"]";

TEST(SkipprLake, EveryRowLandsOnceOnS3PartitionedByDayUnderKills) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("lake");
  constexpr uint64_t kRows = 150000;
  std::map<std::string, std::string> env = moto.env();
  env["BUFFER_THRESHOLD_BYTES"] = "128KiB";
  env["WAL_BYTES_PER_FILE"] = "500000";
  PipelineFixture unkilled(
      sample_to_lake_config(kRows, 9, fmt::format("s3://{}/unkilled", bucket), "bikehire", kDaily));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  PipelineFixture f(sample_to_lake_config(kRows, 9, fmt::format("s3://{}/killed", bucket), "bikehire", kDaily));
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.3";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "1.2";
  const ChaosRuns runs = sync_until_done_under_chaos(
      f, "bikehire", env, 1700,
      {.each_failpoint_in_turn = true, .extra_failpoints = {failpoint::kLakeBeforeVersionHint}, .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 15) << runs.summary();

  TempDir mirror;  // the bucket's objects, where the reader finds them
  moto.download(bucket, "", mirror / bucket);
  expect_hint_names_the_newest_version(mirror / bucket / "killed" / "trips");
  const IcebergDigest want = icebird_digest({fmt::format("s3://{}/unkilled/trips", bucket)}, "trip_id", mirror.path());
  const IcebergDigest got = icebird_digest({fmt::format("s3://{}/killed/trips", bucket)}, "trip_id", mirror.path());
  ASSERT_TRUE(want.error.empty()) << want.error;
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_EQ(want.rows, kRows);
  EXPECT_EQ(got.rows, kRows);
  EXPECT_EQ(got.distinct_keys, kRows);
  EXPECT_EQ(got.hash, want.hash);
  const auto metadata = mirror / bucket / "killed" / "trips";
  expect_each_batch_in_one_snapshot(iceberg_current_metadata(metadata), kRows);
  expect_linear_lineage(iceberg_current_metadata(metadata));
  // Partitioned by day: every data file is in its day's folder.
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(metadata / "data")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    EXPECT_NE(entry.path().parent_path().filename().string().find("event_time_day=20"), std::string::npos)
        << entry.path();
  }
  EXPECT_GT(files, 0u);
  std::printf("[ metrics  ] rows=%llu snapshots=%d %s\n", static_cast<unsigned long long>(kRows), got.snapshots,
              runs.summary().c_str());
}

// A kill after v<N+1>.metadata.json is created and before the version hint names it: the next run finds the
// newer version (the hint is a shortcut, not the truth) and lands nothing twice.
TEST(SkipprLake, AKillBetweenTheCommitAndTheVersionHintLosesAndRepeatsNothing) {
  constexpr uint64_t kRows = 30000;
  TempDir lakes;
  PipelineFixture f(sample_to_lake_config(kRows, 3, lakes.path().string()));
  std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "256KiB"}};
  auto killed = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                          armed_at(env, std::string(failpoint::kLakeBeforeVersionHint), 2), 120);
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  const auto table = lakes / "trips";
  ASSERT_TRUE(std::filesystem::exists(table / "metadata" / "v2.metadata.json"));
  std::ifstream hint(table / "metadata" / "version-hint.text");
  std::string hinted;
  hint >> hinted;
  EXPECT_EQ(hinted, "1");  // v2 is committed, its hint never written

  auto rerun = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  const IcebergDigest got = icebird_digest({file_url(table)}, "trip_id");
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_EQ(got.rows, kRows);
  EXPECT_EQ(got.distinct_keys, kRows);
  expect_each_batch_in_one_snapshot(iceberg_current_metadata(table), kRows);
}

// The same kill at the last commit there is to make: the run after it finds its batches already applied and commits
// nothing, so no later commit moves the hint. A reader that opens the hinted version alone must still see every row.
TEST(SkipprLake, AKillBeforeTheLastCommitsVersionHintLeavesNoReaderAVersionBehind) {
  TempDir lakes;
  PipelineFixture f(sample_to_lake_config(1000, 3, lakes.path().string()));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  // The source grows by one batch, whose commit (the last) is killed before its hint.
  write_text(f.path("skippr.yml"), sample_to_lake_config(2000, 3, lakes.path().string()));
  auto killed = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                          armed_at({}, std::string(failpoint::kLakeBeforeVersionHint), 1), 120);
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  const auto table = lakes / "trips";
  ASSERT_TRUE(std::filesystem::exists(table / "metadata" / "v2.metadata.json"));
  EXPECT_EQ(read_text(table / "metadata" / "version-hint.text"), "1");

  auto rerun = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {}, 120);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_hint_names_the_newest_version(table);
  const IcebergDigest got = icebird_digest({file_url(table)}, "trip_id");
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_EQ(got.rows, 2000u);
  EXPECT_EQ(got.distinct_keys, 2000u);
  expect_each_batch_in_one_snapshot(iceberg_current_metadata(table), 2000);
}

// Two pipelines write one table at once: a commit that loses the race for v<N+1> reloads and commits on the
// winner's snapshot, so both land every row, no data file is lost or doubled, and the history is one line.
TEST(SkipprLake, TwoWritersRacingOnOneTableBothCommitEverything) {
  constexpr uint64_t kRows = 40000;
  TempDir lakes;
  const std::string shared = (lakes / "shared").string();
  std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "32KiB"}};
  PipelineFixture a(sample_to_lake_config(kRows, 21, shared, "alpha"));
  PipelineFixture b(sample_to_lake_config(kRows, 22, shared, "beta"));
  auto start = [&env](const PipelineFixture& f, const std::string& pipeline) {
    std::map<std::string, std::string> e = env;
    e["DATA_DIR"] = (f.root() / "data").string();
    e["SKIPPR_CONFIG_FILE"] = "";
    e["SKIPPR_LOG_LEVEL"] = "info";
    return spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", pipeline, "--once", "--log"}, f.root(), e);
  };
  const int pa = start(a, "alpha");
  const int pb = start(b, "beta");
  ASSERT_EQ(wait_process(pa), 0);
  ASSERT_EQ(wait_process(pb), 0);

  PipelineFixture alone_a(sample_to_lake_config(kRows, 21, (lakes / "a").string(), "alpha"));
  PipelineFixture alone_b(sample_to_lake_config(kRows, 22, (lakes / "b").string(), "beta"));
  ASSERT_EQ(alone_a.skipprd({"sync", "--pipeline", "alpha", "--once"}, env).exit_code, 0);
  ASSERT_EQ(alone_b.skipprd({"sync", "--pipeline", "beta", "--once"}, env).exit_code, 0);

  const IcebergDigest got = icebird_digest({file_url(lakes / "shared" / "trips")}, "trip_id");
  const IcebergDigest want =
      icebird_digest({file_url(lakes / "a" / "trips"), file_url(lakes / "b" / "trips")}, "trip_id");
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_EQ(got.rows, 2 * kRows);
  EXPECT_EQ(got.hash, want.hash);
  const auto metadata = iceberg_current_metadata(lakes / "shared" / "trips");
  expect_each_batch_in_one_snapshot(metadata, 2 * kRows);
  expect_linear_lineage(metadata);

  auto log_of = [](const PipelineFixture& f) {
    std::ifstream in(f.root() / "spawned.err");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::string logs = log_of(a) + log_of(b);
  size_t lost = 0;
  for (size_t at = logs.find("lost to another writer"); at != std::string::npos;
       at = logs.find("lost to another writer", at + 1)) {
    ++lost;
  }
  EXPECT_GE(lost, 1u) << "the two writers never raced: the test shows nothing";
  std::printf("[ metrics  ] snapshots=%zu commits lost and retried: %zu\n", metadata["snapshots"].size(), lost);
}

// Streams into a lake where a batch holds no rows (every record of a file a dead letter): it needs no table, the run
// lands what the others hold, counts the dead letters under their stream, and a later run with a lost DATA_DIR
// resumes after every landed batch (from the newest landing record), adding nothing.
TEST(SkipprLake, StreamsWithABatchOfOnlyDeadLettersLandTheRestAndResumeAfterALostDataDir) {
  PipelineFixture f(jsonl_files_to_sink_config("in/{stream}/*.jsonl", R"(SkipprLake: { path: lake })"));
  const auto write = [&](const std::string& stream, const std::string& file, int from, int to, bool bad = false) {
    std::filesystem::create_directories(f.path("in") / stream);
    std::string lines;
    for (int id = from; id < to; ++id) {
      lines += bad ? fmt::format(R"({{"id":{},"label":)", id) : fmt::format(R"({{"id":{},"label":"l{}"}})", id, id);
      lines += "\n";
    }
    write_text(f.path("in") / stream / file, lines);
  };
  std::filesystem::create_directories(f.path("lake"));
  write("good", "1.jsonl", 0, 100);
  write("other", "1.jsonl", 0, 30);
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  write("bad", "1.jsonl", 0, 5, /*bad=*/true);
  auto only_bad = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(only_bad.exit_code, 0) << only_bad.err;
  write("good", "2.jsonl", 100, 150);
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  const auto rows = [&](const std::string& table) {
    return icebird_digest({file_url(f.path("lake") / table)}, "id").rows;
  };
  EXPECT_EQ(rows("good"), 150u);
  EXPECT_EQ(rows("other"), 30u);
  EXPECT_FALSE(std::filesystem::exists(f.path("lake/bad"))) << "a stream of no rows got a table";
  std::set<std::string> tables;
  for (const auto& e : std::filesystem::directory_iterator(f.path("lake"))) tables.insert(e.path().filename());
  EXPECT_EQ(tables, (std::set<std::string>{".skippr-landings", "good", "other"}));
  auto stats = f.skipprd({"query", "--sql", "SHOW STATS FOR bikehire", "--output", "json"});
  EXPECT_NE(stats.out.find(R"({"stat":"dead_letters[bad]","value":"5"})"), std::string::npos) << stats.out;

  std::filesystem::remove_all(f.path("data"));
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(rows("good"), 150u);
  EXPECT_EQ(rows("other"), 30u);
}

TEST(SkipprLake, ConfigMistakesStopWithExit2BeforeAnythingIsRead) {
  TempDir lakes;
  const std::string path = lakes.path().string();
  struct Case {
    std::string more, landing, expect;
  };
  const std::vector<Case> cases = {
      {", partition_by: [\"bucket(16, trip_id)\"]", "append", "partition_by entry"},
      {", partition_by: [\"week(event_time)\"]", "append", "the transforms are year, month, day and hour"},
      {"", "merge_by_key", "landing merge_by_key is not supported"},
      {", manifest_merge_count: 1", "append", "manifest_merge_count at least 2"},
  };
  for (const auto& c : cases) {
    std::string config = sample_to_lake_config(100, 1, path, "bikehire", c.more);
    config += fmt::format("    landing: {}\n    primary_key: [trip_id]\n", c.landing);
    PipelineFixture f(config);
    auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
    EXPECT_EQ(run.exit_code, 2) << c.more << c.landing << run.err;
    EXPECT_NE(run.err.find(c.expect), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(lakes / "trips" / "metadata"));
  }

  // The Glue-catalogued sinks check their names and bucket at load time, SkipprLake its table's folder.
  for (const auto& [sink, expect] : std::vector<std::pair<std::string, std::string>>{
           {"AthenaIceberg: { bucket: b, database: Sales, table: t }", "'Sales' is not a Glue name"},
           {"Athena: { bucket: b, database: d, table: my-table }", "'my-table' is not a Glue name"},
           {"AthenaIceberg: { bucket: b/x, database: d, table: t }", "bucket 'b/x' must be a bucket name"},
           // The landing records' folder is the lake's own.
           {"SkipprLake: { path: lake, table: .skippr-landings }", "must be a plain name"}}) {
    PipelineFixture f(
        fmt::format("data_sources:\n  s:\n    Sample: {{ rows: 10 }}\ndata_sinks:\n  lake:\n    {}\n"
                    "pipelines:\n  p:\n    data_source: data_sources.s\n    data_sink: data_sinks.lake\n",
                    sink));
    auto run = f.skipprd({"sync", "--pipeline", "p", "--once"});
    EXPECT_EQ(run.exit_code, 2) << sink << run.err;
    EXPECT_NE(run.err.find(expect), std::string::npos) << run.err;
  }

  // A table that exists with another partition spec: said at open, before anything is read.
  PipelineFixture first(sample_to_lake_config(1000, 1, path, "bikehire", ", partition_by: [\"day(event_time)\"]"));
  ASSERT_EQ(first.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  PipelineFixture other(sample_to_lake_config(1000, 2, path, "other", ", partition_by: [station]"));
  auto run = other.skipprd({"sync", "--pipeline", "other", "--once"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("is partitioned by [day(event_time)], and partition_by says [station]"), std::string::npos)
      << run.err;
  EXPECT_EQ(icebird_digest({file_url(lakes / "trips")}, "trip_id").rows, 1000u);
}

// The sink suite (tests/support/sink_suite.h) on SkipprLake: a table (or a table per stream) per scenario, read by
// icebird (an Iceberg reader of its own), its ledger the BatchIds in the snapshots' summaries.
const SinkUnderTest& skipprlake_under_test() {
  static const TempDir lakes;
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "SkipprLake";
    s.sink = [](const std::string& where) {
      return fmt::format(R"(SkipprLake: {{ path: "{}", table: "{}", max_snapshots: 100000 }})", lakes.path().string(),
                         where);
    };
    s.digest = [](const PipelineFixture&, const std::string& where, const std::string& key) {
      if (!std::filesystem::exists(lakes.path() / where)) {
        return std::tuple<uint64_t, uint64_t, std::string>(0, 0, "");
      }
      const IcebergDigest d = icebird_digest({file_url(lakes.path() / where)}, key);
      EXPECT_TRUE(d.error.empty()) << d.error;
      return std::tuple<uint64_t, uint64_t, std::string>(d.rows, d.distinct_keys, d.hash);
    };
    s.ledger = [](const PipelineFixture&, const std::string& where) {
      const auto ids = iceberg_snapshot_batch_ids(iceberg_current_metadata(lakes.path() / where));
      const std::set<std::string> distinct(ids.begin(), ids.end());
      return std::pair<uint64_t, uint64_t>(ids.size(), distinct.size());
    };
    s.lands_streams = true;
    s.lands_tables_one_by_one = true;
    s.after_landing = [](const PipelineFixture&, const std::string& where) {
      expect_hint_names_the_newest_version(lakes.path() / where);
      expect_linear_lineage(iceberg_current_metadata(lakes.path() / where));
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(SkipprLake, skipprlake_under_test());

}  // namespace skippr::test
