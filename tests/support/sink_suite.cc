// The scenarios of tests/support/sink_suite.h. Each compares what the sink landed by reading it back through the
// destination (SinkUnderTest::rows): counts, keys seen once, and the content of a killed run against an unkilled one.
#include "support/sink_suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <regex>
#include <set>

#include "sinks/kit/stream_tables.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/stream_files.h"

namespace skippr::test {

bool sink_suite_linked() { return true; }

std::string select_list(const std::vector<std::string>& columns, char quote) {
  std::string out;
  // As text in SQL, so each engine renders its own types (and a client needs no converter for them).
  for (const auto& c : columns)
    out += fmt::format("{}CAST({}{}{} AS VARCHAR)", out.empty() ? "" : ", ", quote, c, quote);
  return out;
}

std::vector<std::string> joined_rows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(fmt::format("{}", fmt::join(row, "|")));
  return out;
}

std::vector<std::string> joined_rows(const std::vector<std::vector<std::optional<std::string>>>& rows) {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += (i ? "|" : "") + row[i].value_or("NULL");
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> parquet_rows(const std::filesystem::path& folder, const std::vector<std::string>& columns) {
  if (!std::filesystem::is_directory(folder)) return {};
  bool any = false;
  for (const auto& e : std::filesystem::directory_iterator(folder)) any = any || e.path().extension() == ".parquet";
  if (!any) return {};
  return joined_rows(duckdb_memory_rows(fmt::format("SELECT {} FROM read_parquet('{}/*.parquet', union_by_name = true)",
                                                    select_list(columns), folder.string())));
}

void read_from_postgres(SinkUnderTest& s, const std::string& db, const std::string& schema) {
  s.rows = [db, schema](const PipelineFixture&, const std::string& table, const std::vector<std::string>& columns) {
    return joined_rows(
        SharedPostgres().query(db, fmt::format("SELECT {} FROM \"{}\".\"{}\"", select_list(columns), schema, table)));
  };
  s.ledger = [db, schema](const PipelineFixture&, const std::string& table) {
    const auto row =
        SharedPostgres()
            .query(db, fmt::format("SELECT count(*), count(DISTINCT batch_id) FROM \"{0}\"._skippr_batches "
                                   "WHERE target_table IN ('\"{0}\".\"{1}\"', '[{0}].[{1}]', '{0}.\"{1}\"', "
                                   "'{0}.{1}')",
                                   schema, table))
            .at(0);
    return std::pair<uint64_t, uint64_t>(std::stoull(*row[0]), std::stoull(*row[1]));
  };
}

SinkUnderTest object_store_under_test(
    std::string name, std::function<std::string(const std::string& prefix)> sink,
    std::function<std::filesystem::path(const std::string& prefix, const std::filesystem::path& dir)> fetch) {
  auto as_prefix = [](std::string where) { return where.ends_with('/') ? where : where + "/"; };
  SinkUnderTest s;
  s.name = std::move(name);
  s.sink = [sink = std::move(sink), as_prefix](const std::string& where) { return sink(as_prefix(where)); };
  s.rows = [fetch, as_prefix](const PipelineFixture&, const std::string& where,
                              const std::vector<std::string>& columns) {
    TempDir dir;
    return parquet_rows(fetch(as_prefix(where), dir.path()), columns);
  };
  s.after_landing = [fetch, as_prefix](const PipelineFixture&, const std::string& where) {
    TempDir dir;
    const auto folder = fetch(as_prefix(where), dir.path());
    const std::regex batch_object(R"(bikehire-\d{6}-[0-9a-f]{32}-\d{20}\.parquet)");
    for (const auto& e : std::filesystem::recursive_directory_iterator(folder)) {
      if (e.is_regular_file()) {
        EXPECT_TRUE(std::regex_match(e.path().filename().string(), batch_object)) << where << ": " << e.path();
      }
    }
  };
  s.folders = true;
  s.lands_streams = true;
  return s;
}

namespace {

// The scenarios register in every binary the support library's unity chunk reaches; only the sinks' areas run them.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SinkSuite);

const std::vector<std::string> kTripColumns = {"trip_id", "rider_id",   "bike_id",  "event_type", "event_time",
                                               "station", "duration_s", "firmware", "metadata"};
const std::vector<std::string> kStreamColumns = {"id", "label"};

// A table (or prefix) name no other scenario of this binary uses, on a server the binary shares.
std::string unique(const std::string& stem) {
  static std::atomic<int> next{0};
  return fmt::format("{}_{}_{}", stem, ::getpid() % 100000, ++next);
}

std::map<std::string, std::string> with(std::map<std::string, std::string> env,
                                        const std::map<std::string, std::string>& more) {
  for (const auto& [k, v] : more) env[k] = v;
  return env;
}

// What a table (or prefix) holds: how many rows, how many distinct first columns (the key) among them, and what
// compares their content (the rows sorted, or the digest of a sink read by a reader of its own); `rows` sorted, when
// the sink gives rows.
struct Landed {
  size_t count = 0;
  size_t keys = 0;
  std::string content;
  std::vector<std::string> rows;
};

Landed landed(const SinkUnderTest& sut, const PipelineFixture& f, const std::string& where,
              const std::vector<std::string>& columns) {
  Landed out;
  if (sut.digest) {
    const auto [count, keys, hash] = sut.digest(f, where, columns.front());
    return {count, keys, hash, {}};
  }
  out.rows = sut.rows(f, where, columns);
  std::sort(out.rows.begin(), out.rows.end());
  std::set<std::string> keys;
  for (const auto& row : out.rows) {
    keys.insert(row.substr(0, row.find('|')));
    out.content += row + '\n';
  }
  out.count = out.rows.size();
  out.keys = keys.size();
  return out;
}

// The pattern that lands each stream on its own: <prefix>{stream} as a table, <prefix>{stream}/ as a folder.
std::string stream_pattern(const SinkUnderTest& sut, const std::string& prefix) {
  return sut.folders ? prefix + "/{stream}/" : prefix + "_{stream}";
}
std::string stream_place(const SinkUnderTest& sut, const std::string& prefix, const std::string& stream) {
  return sut.folders ? stream_prefix_for(stream_pattern(sut, prefix), stream) : stream_table(prefix + "_", stream);
}

void expect_ledger_once(const SinkUnderTest& sut, const PipelineFixture& f, const std::string& table) {
  if (!sut.ledger) return;
  const auto [rows, ids] = sut.ledger(f, table);
  EXPECT_EQ(rows, ids) << table << ": a batch is in the ledger twice";
  EXPECT_GT(rows, 0u) << table << ": no ledger row";
}

void after_landing(const SinkUnderTest& sut, const PipelineFixture& f, const std::string& where) {
  if (sut.after_landing) sut.after_landing(f, where);
}

ChaosOptions chaos_options(const SinkUnderTest& sut, int min_kills) {
  return {.lose_data_dir_every = sut.ledger ? 4 : 0, .min_kills = min_kills};
}

std::map<std::string, std::string> chaos_env(const SinkUnderTest& sut, std::map<std::string, std::string> env) {
  env["SKIPPR_CHAOS_MIN_SECONDS"] = fmt::format("{}", sut.chaos_min_seconds);
  env["SKIPPR_CHAOS_MAX_SECONDS"] = fmt::format("{}", sut.chaos_max_seconds);
  return env;
}

}  // namespace

// Every row of a run lands once (and once in the ledger); a second run, which has nothing new to read, adds nothing.
TEST_P(SinkSuite, EveryRowLandsOnceAndASecondRunAddsNothing) {
  const std::string where = unique("once");
  PipelineFixture f(sample_to_sink_config(sut().sink(where), 20000, 5));
  const auto env = with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "256KiB"}});
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Landed first = landed(sut(), f, where, kTripColumns);
  EXPECT_EQ(first.count, 20000u);
  EXPECT_EQ(first.keys, 20000u);
  expect_ledger_once(sut(), f, where);
  after_landing(sut(), f, where);
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(landed(sut(), f, where, kTripColumns).content, first.content);
}

// Killed after the sink landed a batch and before the WAL recorded it: the next run lands that batch again under its
// id, and the sink recognises it (the run says so) instead of landing its rows twice.
TEST_P(SinkSuite, AReplayedBatchIsRecognisedAsLandedAndNotLandedTwice) {
  const std::string where = unique("replay");
  PipelineFixture f(sample_to_sink_config(sut().sink(where), 6000, 3));
  const auto env = with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "128KiB"}});
  auto killed = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, armed_at(env, "sink.after_commit", 2));
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  if (!sut().at_least_once) {
    std::smatch said;
    ASSERT_TRUE(std::regex_search(again.out, said, std::regex(R"((\d+) already applied)"))) << again.out;
    EXPECT_GE(std::stoi(said[1]), 1) << again.out;
  }
  const Landed all = landed(sut(), f, where, kTripColumns);
  EXPECT_EQ(all.count, 6000u);
  EXPECT_EQ(all.keys, 6000u);
  expect_ledger_once(sut(), f, where);
  after_landing(sut(), f, where);
}

// A File source of five stream folders: each stream lands in its own table (or folder), every one equal to what an
// unkilled run lands, under SIGKILLs (and lost DATA_DIRs where the sink keeps a ledger, which then resumes per table).
TEST_P(SinkSuite, SeveralStreamsLandApartEachEqualToAnUnkilledRun) {
  if (!sut().lands_streams) GTEST_SKIP() << sut().name << " lands one stream (config refuses several)";
  const std::string calm_at = unique("calm");
  const std::string killed_at = unique("kill");
  const auto env = with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "64KiB"}, {"WAL_BYTES_PER_FILE", "300000"}});
  PipelineFixture calm(jsonl_files_to_sink_config("in/{stream}/*.jsonl", sut().sink(stream_pattern(sut(), calm_at))));
  const auto expected = write_stream_files(calm.root(), 6, 1500);
  auto clean = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  PipelineFixture f(jsonl_files_to_sink_config("in/{stream}/*.jsonl", sut().sink(stream_pattern(sut(), killed_at))));
  write_stream_files(f.root(), 6, 1500);
  const ChaosRuns runs =
      sync_until_done_under_chaos(f, "bikehire", chaos_env(sut(), env), 5100, chaos_options(sut(), 10));
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 10) << runs.summary();
  for (const auto& stream : stream_names()) {
    const Landed want = landed(sut(), calm, stream_place(sut(), calm_at, stream), kStreamColumns);
    EXPECT_EQ(want.count, expected.at(stream)) << stream;
    EXPECT_EQ(want.keys, want.count) << stream;
    EXPECT_EQ(landed(sut(), f, stream_place(sut(), killed_at, stream), kStreamColumns).content, want.content) << stream;
    if (!sut().folders) expect_ledger_once(sut(), f, stream_place(sut(), killed_at, stream));
    after_landing(sut(), f, stream_place(sut(), killed_at, stream));
  }
  std::printf("[ metrics  ] %s streams: %s\n", sut().name.c_str(), runs.summary().c_str());
}

// A batch of five streams stopped between its tables (some hold it, the rest not), then its DATA_DIR lost: the next
// run finishes the batch's landing before it reads the tip, so every table ends equal to an unkilled run's, each
// batch once in each table's ledger.
TEST_P(SinkSuite, ABatchStoppedBetweenItsTablesIsFinishedAfterALostDataDir) {
  if (!sut().lands_tables_one_by_one) GTEST_SKIP() << sut().name << " lands a batch's tables in one transaction";
  const std::string calm_at = unique("sall");
  const std::string killed_at = unique("shalf");
  const auto env = with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "64KiB"}});
  PipelineFixture calm(jsonl_files_to_sink_config("in/{stream}/*.jsonl", sut().sink(stream_pattern(sut(), calm_at))));
  write_stream_files(calm.root(), 3, 400);
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env).exit_code, 0);
  PipelineFixture f(jsonl_files_to_sink_config("in/{stream}/*.jsonl", sut().sink(stream_pattern(sut(), killed_at))));
  write_stream_files(f.root(), 3, 400);
  auto killed = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, armed_at(env, "sink.between_tables", 2));
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  std::filesystem::remove_all(f.path("data"));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("finishing batch"), std::string::npos) << run.err;
  for (const auto& stream : stream_names()) {
    const Landed want = landed(sut(), calm, stream_place(sut(), calm_at, stream), kStreamColumns);
    EXPECT_GT(want.count, 0u) << stream;
    EXPECT_EQ(landed(sut(), f, stream_place(sut(), killed_at, stream), kStreamColumns).content, want.content) << stream;
    expect_ledger_once(sut(), f, stream_place(sut(), killed_at, stream));
    after_landing(sut(), f, stream_place(sut(), killed_at, stream));
  }
}

// Five stream folders merged by key (each stream on its own `id`), read again after RESET PIPELINE: every stream's
// table holds each of its keys once, with the content an append of the same files lands.
TEST_P(SinkSuite, SeveralStreamsMergedByKeyHoldEachKeyOnceAfterARereadAll) {
  if (!sut().lands_streams || !sut().merges || !sut().rows) {
    GTEST_SKIP() << sut().name << " does not merge several streams by key";
  }
  const std::string at = unique("smerge");
  const auto env = with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "64KiB"}});
  PipelineFixture f(jsonl_files_to_sink_config("in/{stream}/*.jsonl", sut().sink(stream_pattern(sut(), at))) +
                    "    landing: merge_by_key\n    primary_key: id\n");
  const auto expected = write_stream_files(f.root(), 4, 500);
  auto first = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::map<std::string, std::string> contents;
  for (const auto& stream : stream_names()) {
    const Landed got = landed(sut(), f, stream_place(sut(), at, stream), kStreamColumns);
    EXPECT_EQ(got.count, expected.at(stream)) << stream;
    EXPECT_EQ(got.keys, got.count) << stream;
    contents[stream] = got.content;
  }
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, env).exit_code, 0);
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const auto& stream : stream_names()) {
    EXPECT_EQ(landed(sut(), f, stream_place(sut(), at, stream), kStreamColumns).content, contents[stream]) << stream;
    after_landing(sut(), f, stream_place(sut(), at, stream));
  }
}

// Streams a.b and a_b would both land in table <prefix>_a_b: the run stops with exit 2 naming both, and the second
// never lands there (the sink checks every part, whether the part before it was of another table or of this one).
TEST_P(SinkSuite, TwoStreamsThatWouldShareATableStopTheRunNamingBoth) {
  if (!sut().lands_streams || sut().folders || sut().keeps_stream_names || !sut().rows) {
    GTEST_SKIP() << sut().name << " lands no stream tables (or keeps stream names as written)";
  }
  const std::string at = unique("shared");
  PipelineFixture f(jsonl_files_to_sink_config("in/{stream}/*.jsonl", sut().sink(stream_pattern(sut(), at))));
  for (const std::string stream : {"a.b", "a_b"}) {
    std::string lines;
    for (int i = 0; i < 50; ++i) lines += fmt::format(R"({{"id":{},"label":"{}-{}"}})", i, stream, i) + "\n";
    std::filesystem::create_directories(f.path("in") / stream);
    write_text(f.path("in") / stream / "1.jsonl", lines);
  }
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, sut().env);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("'a.b'"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("'a_b'"), std::string::npos) << run.err;
  size_t landed_rows = 0;
  try {
    landed_rows = sut().rows(f, stream_place(sut(), at, "a.b"), kStreamColumns).size();
  } catch (const std::exception&) {  // no table at all: nothing landed
  }
  EXPECT_LE(landed_rows, 50u) << "both streams landed in one table";
  // The way out: one of them left out, and the pipeline reset (its committed batch holds both). Then a.b lands, and
  // what the stopped run staged is swept.
  std::filesystem::remove_all(f.path("in") / "a_b");
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, sut().env).exit_code, 0);
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, sut().env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(landed(sut(), f, stream_place(sut(), at, "a.b"), kStreamColumns).count, 50u);
  after_landing(sut(), f, stream_place(sut(), at, "a.b"));
}

// merge_by_key on trip_id, the whole Sample read again after RESET PIPELINE: the same rows, each key once, every one
// carrying the newer lineage's order token.
TEST_P(SinkSuite, MergeByKeyUpsertsWhatARereadBrings) {
  if (!sut().merges || !sut().rows) GTEST_SKIP() << sut().name << " does not merge by key (or gives no rows)";
  const std::string where = unique("merged");
  PipelineFixture f(sample_to_sink_config(sut().sink(where), 8000, 6) +
                    "    landing: merge_by_key\n    primary_key: trip_id\n");
  const auto env = with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "128KiB"}});
  auto first_run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(first_run.exit_code, 0) << first_run.err;
  const Landed first = landed(sut(), f, where, kTripColumns);
  EXPECT_EQ(first.count, 8000u);
  EXPECT_EQ(first.keys, 8000u);
  auto tokens = [&] {
    std::vector<double> out;
    for (const auto& t : sut().rows(f, where, {"_skippr_order"})) out.push_back(std::stod(t));
    return out;
  };
  const auto first_tokens = tokens();
  ASSERT_FALSE(first_tokens.empty());
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, env).exit_code, 0);
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(landed(sut(), f, where, kTripColumns).content, first.content);
  const auto second_tokens = tokens();
  ASSERT_FALSE(second_tokens.empty());
  EXPECT_GT(*std::min_element(second_tokens.begin(), second_tokens.end()),
            *std::max_element(first_tokens.begin(), first_tokens.end()))
      << "a row kept the older lineage's token";
  expect_ledger_once(sut(), f, where);
  after_landing(sut(), f, where);
}

// A table made beforehand with a BIGINT duration_s: whole durations land, the others go to <table>__skippr_rejected
// with their reason, in the batch's transaction; together they are every row once.
TEST_P(SinkSuite, ValuesTheColumnCannotHoldGoToTheRejectsTable) {
  if (!sut().make_narrow_table || !sut().rows) GTEST_SKIP() << sut().name << " has no rejects table (or gives no rows)";
  const std::string where = unique("narrow");
  PipelineFixture f(sample_to_sink_config(sut().sink(where), 5000, 4));
  sut().make_narrow_table(f, where);
  auto run =
      f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "128KiB"}}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Landed kept = landed(sut(), f, where, {"trip_id"});
  const Landed rejected = landed(sut(), f, where + "__skippr_rejected", {"batch_id", "row", "reason"});
  EXPECT_GT(kept.count, 0u);
  EXPECT_EQ(kept.keys, kept.count);
  ASSERT_GT(rejected.count, 0u);
  std::set<std::string> batch_rows;
  for (const auto& r : rejected.rows) batch_rows.insert(r.substr(0, r.find('|', r.find('|') + 1)));
  EXPECT_EQ(batch_rows.size(), rejected.count) << "a rejected row was written twice";
  EXPECT_EQ(kept.count + rejected.count, 5000u);
  EXPECT_NE(rejected.rows.front().find("duration_s"), std::string::npos) << rejected.rows.front();
  after_landing(sut(), f, where);
}

// The Sample under SIGKILLs at random instants and at every failpoint (and lost DATA_DIRs where the sink keeps a
// ledger): the same rows as a run never killed.
TEST_P(SinkSuite, KillLoopEqualsAnUnkilledRun) {
  const uint64_t rows = sut().kill_loop_rows;
  const auto env = with(sut().env, {{"BUFFER_THRESHOLD_BYTES", "128KiB"}, {"WAL_BYTES_PER_FILE", "1000000"}});
  const std::string calm_at = unique("unkilled");
  PipelineFixture calm(sample_to_sink_config(sut().sink(calm_at), rows, 9));
  auto clean = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const std::string where = unique("killed");
  PipelineFixture f(sample_to_sink_config(sut().sink(where), rows, 9));
  if (sut().kills_inside_landing > 0) {
    ASSERT_EQ(kill_inside_landing(f, "bikehire", env, sut().kills_inside_landing), "");
  }
  const ChaosRuns runs =
      sync_until_done_under_chaos(f, "bikehire", chaos_env(sut(), env), 4700, chaos_options(sut(), sut().min_kills));
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, sut().min_kills) << runs.summary();
  const Landed want = landed(sut(), calm, calm_at, kTripColumns);
  EXPECT_EQ(want.count, rows);
  EXPECT_EQ(want.keys, rows);
  EXPECT_TRUE(landed(sut(), f, where, kTripColumns).content == want.content) << "the killed run's rows differ";
  expect_ledger_once(sut(), f, where);
  after_landing(sut(), f, where);
  if (sut().after_kill_loop) sut().after_kill_loop(f, where, env);
  std::printf("[ metrics  ] %s rows=%llu %s\n", sut().name.c_str(), static_cast<unsigned long long>(rows),
              runs.summary().c_str());
}

// What no retry can fix stops the run with exit 2 and a message saying what is wrong, before anything is read; no
// secret appears in what the run prints.
TEST_P(SinkSuite, SetupMistakesStopWithExitTwoAndNoSecret) {
  if (sut().mistakes.empty()) GTEST_SKIP() << sut().name << " lists no setup mistakes";
  for (const auto& mistake : sut().mistakes) {
    PipelineFixture f(sample_to_sink_config(mistake.sink, 1000));
    auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, sut().env, 120);
    EXPECT_EQ(run.exit_code, 2) << mistake.sink << "\n" << run.err;
    EXPECT_NE(run.err.find(mistake.says), std::string::npos) << mistake.sink << " should say: " << mistake.says << "\n"
                                                             << run.err;
    if (!mistake.secret.empty()) {
      EXPECT_EQ(run.err.find(mistake.secret), std::string::npos) << run.err;
      EXPECT_EQ(run.out.find(mistake.secret), std::string::npos) << run.out;
      EXPECT_TRUE(files_containing(f.path("data"), mistake.secret).empty()) << mistake.sink;
    }
    EXPECT_FALSE(std::filesystem::exists(f.path("data/pipelines/bikehire/wal")) &&
                 !std::filesystem::is_empty(f.path("data/pipelines/bikehire/wal")))
        << mistake.sink << ": a batch was committed before the mistake was found";
  }
}

}  // namespace skippr::test
