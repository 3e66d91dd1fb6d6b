// The sync command end to end: the real binary, a real DuckDB file, the exit codes of PRODUCT.md.
#include <duckdb.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"
#include "wal/wal.h"

namespace skippr::test {
namespace {

using namespace std::chrono_literals;

TEST(Sync, SampleLandsEveryRowOnceInDuckDB) {
  PipelineFixture f(sample_to_duckdb_config(100000));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "json"},
                     {{"BUFFER_THRESHOLD_BYTES", "2000000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto digest = trips_digest(f.path("out.duckdb"));
  EXPECT_EQ(digest.rows, 100000u);
  EXPECT_EQ(digest.distinct_ids, 100000u);
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT min(trip_id) || '-' || max(trip_id) FROM trips"), "1-100000");
  // Every committed batch has its ledger row, and the events say so.
  int committed = 0, landed = 0;
  bool complete = false;
  std::istringstream events(r.out);
  for (std::string line; std::getline(events, line);) {
    auto e = nlohmann::json::parse(line);
    committed += e["event"] == "batch_committed";
    landed += e["event"] == "batch_landed";
    if (e["event"] == "sync_complete") {
      complete = true;
      EXPECT_EQ(e["rows_landed"], 100000);
      EXPECT_EQ(e["exit_code"], 0);
    }
  }
  EXPECT_TRUE(complete);
  EXPECT_GT(committed, 1);  // the threshold cuts several batches
  EXPECT_EQ(committed, landed);
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) FROM _skippr_batches"), std::to_string(landed));
  // Everything landed: the WAL keeps no batch waiting.
  auto show = f.skipprd({"query", "--sql", "show pipeline bikehire;"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("batches_waiting       0"), std::string::npos) << show.out;
  // A second run reads nothing new and lands nothing twice.
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "text"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(trips_digest(f.path("out.duckdb")), digest);
}

TEST(Sync, SameSeedGivesTheSameContentAndAnotherSeedDoesNot) {
  PipelineFixture a(sample_to_duckdb_config(20000, 7)), b(sample_to_duckdb_config(20000, 7)),
      c(sample_to_duckdb_config(20000, 8));
  ASSERT_EQ(a.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  // Smaller batches must not change the content.
  ASSERT_EQ(b.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "100000"}}).exit_code,
            0);
  ASSERT_EQ(c.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  EXPECT_EQ(trips_digest(a.path("out.duckdb")), trips_digest(b.path("out.duckdb")));
  EXPECT_NE(trips_digest(a.path("out.duckdb")).hash, trips_digest(c.path("out.duckdb")).hash);
}

TEST(Sync, ASecondCopyOfThePipelineExits3AndNamesTheHolder) {
  PipelineFixture f(sample_to_duckdb_config(1000));
  // Without --once the first copy lands everything and then waits for the next poll.
  const int first = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--output", "text"}, f.root(),
                                  {{"DATA_DIR", (f.root() / "data").string()}, {"SYNC_FREQUENCY", "900"}});
  for (int i = 0; i < 300 && read_text(f.path("spawned.out")).find("landed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  auto second = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_NE(second.err.find("already running"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("pid " + std::to_string(first)), std::string::npos) << second.err;
  // SIGTERM: stop reading, nothing waits, exit 0.
  kill(first, SIGTERM);
  EXPECT_EQ(wait_process(first), 0) << read_text(f.path("spawned.err"));
  EXPECT_EQ(trips_digest(f.path("out.duckdb")).rows, 1000u);
}

// A pipeline's first sync in a DATA_DIR asks the destination what it already holds (issue 11): while it cannot,
// nothing is read, and the exit is 75 with a sentence saying so.
TEST(Sync, AFirstSyncWaitsForTheDestinationBeforeReadingAnything) {
  PipelineFixture f(sample_to_duckdb_config(5000));
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  auto blocked =
      f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "json"}, {{"SINK_RETRY_SECONDS", "1"}});
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  EXPECT_EQ(blocked.exit_code, 75) << blocked.err;
  EXPECT_NE(blocked.err.find("nothing was read from the source"), std::string::npos) << blocked.err;
  EXPECT_EQ(blocked.out.find("batch_committed"), std::string::npos) << blocked.out;
  EXPECT_FALSE(std::filesystem::exists(f.path("data/pipelines/bikehire/wal")));
  auto rerun = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(trips_digest(f.path("out.duckdb")).rows, 5000u);
}

// A state made by RESET (or by any earlier sync) reads into the WAL while the destination is away.
void start_state_without_reading(const PipelineFixture& f) {
  auto reset = f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
}

TEST(Sync, ALockedDestinationExits75AndARerunDeliversEveryRowOnce) {
  PipelineFixture f(sample_to_duckdb_config(50000));
  start_state_without_reading(f);
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  ASSERT_TRUE(std::filesystem::exists(f.path("holder.ready")));
  auto blocked = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                           {{"SINK_RETRY_SECONDS", "1"}, {"BUFFER_THRESHOLD_BYTES", "500000"}});
  EXPECT_EQ(blocked.exit_code, 75) << blocked.err;
  EXPECT_NE(blocked.err.find("wait in the WAL"), std::string::npos) << blocked.err;
  EXPECT_NE(blocked.err.find("run the same command again"), std::string::npos) << blocked.err;
  EXPECT_NE(blocked.err.find("out.duckdb"), std::string::npos) << blocked.err;  // names what is unavailable
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);

  auto rerun = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "json"},
                         {{"BUFFER_THRESHOLD_BYTES", "500000"}});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_NE(rerun.out.find("\"replayed\":true"), std::string::npos) << "committed batches land first";
  const auto digest = trips_digest(f.path("out.duckdb"));
  EXPECT_EQ(digest.rows, 50000u);
  EXPECT_EQ(digest.distinct_ids, 50000u);
  PipelineFixture straight(sample_to_duckdb_config(50000));
  ASSERT_EQ(straight.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  EXPECT_EQ(digest, trips_digest(straight.path("out.duckdb")));
}

TEST(Sync, ADamagedWalRecordExits70NamingFileAndOffsetAndChangesNothing) {
  PipelineFixture f(sample_to_duckdb_config(30000));
  start_state_without_reading(f);
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  auto blocked = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                           {{"SINK_RETRY_SECONDS", "0.5"}, {"BUFFER_THRESHOLD_BYTES", "300000"}});
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  ASSERT_EQ(blocked.exit_code, 75) << blocked.err;
  // Flip one byte inside the first batch record of the first segment (after its header record).
  std::filesystem::path segment;
  for (const auto& e : std::filesystem::directory_iterator(f.path("data/pipelines/bikehire/wal"))) {
    if (segment.empty() || e.path() < segment) segment = e.path();
  }
  ASSERT_FALSE(segment.empty());
  const auto size_before = std::filesystem::file_size(segment);
  {
    int fd = open(segment.c_str(), O_RDWR);
    char byte;
    ASSERT_EQ(pread(fd, &byte, 1, 200), 1);
    byte = static_cast<char>(byte ^ 0x5A);
    ASSERT_EQ(pwrite(fd, &byte, 1, 200), 1);
    close(fd);
  }
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  EXPECT_EQ(r.exit_code, 70) << r.err;
  EXPECT_NE(r.err.find(segment.filename().string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offset"), std::string::npos) << r.err;
  EXPECT_EQ(std::filesystem::file_size(segment), size_before);  // nothing was truncated or rewritten
}

// The start-up scan does not read the large payloads of segments before the newest (they were synced in full, so
// no crash tore them); damage there must still stop the landing of that batch, before anything after it lands.
TEST(Sync, ADamagedPayloadInAnOlderSegmentExits70WhenThatBatchIsLandedAndNothingAfterItLands) {
  PipelineFixture f(sample_to_duckdb_config(40000));
  // One batch per segment (a segment rolls once it holds anything), batches large enough to be skipped by the scan.
  const std::map<std::string, std::string> env = {
      {"SINK_RETRY_SECONDS", "0.5"}, {"BUFFER_THRESHOLD_BYTES", "2000000"}, {"WAL_BYTES_PER_FILE", "1"}};
  start_state_without_reading(f);
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  auto blocked = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  ASSERT_EQ(blocked.exit_code, 75) << blocked.err;

  auto wal = Wal::inspect(f.path("data/pipelines/bikehire/wal"));
  ASSERT_TRUE(wal) << wal.error().message;
  ASSERT_GE(wal->batches.size(), 3u) << "need a damaged batch with a landable one before it and one after it";
  ASSERT_GE(wal->segments.size(), 3u);
  const WalBatchInfo first = wal->batches[0];
  const WalBatchInfo damaged = wal->batches[1];
  ASSERT_NE(std::filesystem::path(damaged.segment).filename().string(), wal->segments.back().name)
      << "the damaged batch must not be in the newest segment";
  ASSERT_GT(damaged.record_bytes, 128u << 10) << "the payload must reach past the front the scan reads";
  {
    const off_t at = static_cast<off_t>(damaged.offset + damaged.record_bytes - 100);
    int fd = open(damaged.segment.c_str(), O_RDWR);
    char byte;
    ASSERT_EQ(pread(fd, &byte, 1, at), 1);
    byte = static_cast<char>(byte ^ 0x5A);
    ASSERT_EQ(pwrite(fd, &byte, 1, at), 1);
    close(fd);
  }
  const std::string before = read_text(damaged.segment);

  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  EXPECT_EQ(r.exit_code, 70) << r.err;
  EXPECT_NE(r.err.find(std::filesystem::path(damaged.segment).filename().string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at byte offset " + std::to_string(damaged.offset)), std::string::npos) << r.err;
  // The batch before it landed, exactly once; nothing from it or after it did.
  const TableDigest digest = trips_digest(f.path("out.duckdb"));
  EXPECT_EQ(digest.rows, first.rows);
  EXPECT_EQ(digest.distinct_ids, first.rows);
  PipelineFixture straight(sample_to_duckdb_config(first.rows));
  ASSERT_EQ(straight.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  EXPECT_EQ(digest, trips_digest(straight.path("out.duckdb")));
  EXPECT_EQ(read_text(damaged.segment), before) << "nothing may be truncated or rewritten";
  auto after = Wal::inspect(f.path("data/pipelines/bikehire/wal"));
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->landed_watermark, first.seq);
  EXPECT_EQ(after->batches.back().seq, wal->batches.back().seq);  // the batches after it are still waiting
}

TEST(Sync, ResetReadsEverythingAgainUnderANewEpoch) {
  PipelineFixture f(sample_to_duckdb_config(10000));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  auto reset = f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_NE(reset.out.find("epoch 2"), std::string::npos) << reset.out;
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The append table now holds every row twice, and the new batches landed as new ones, not as replays.
  const auto db = f.path("out.duckdb");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM trips"), "20000");
  EXPECT_EQ(duckdb_value(db, "SELECT count(DISTINCT trip_id) FROM trips"), "10000");
  EXPECT_EQ(r.out.find("\"already_applied\":true"), std::string::npos);
  EXPECT_EQ(duckdb_value(db, "SELECT sum(rows) FROM _skippr_batches WHERE epoch = 2"), "10000");
  EXPECT_EQ(duckdb_value(db, "SELECT sum(rows) FROM _skippr_batches WHERE epoch = 1"), "10000");
  // RESET also made a new lineage: the two epochs' batch ids share nothing but the pipeline's name.
  EXPECT_EQ(duckdb_value(db, "SELECT count(DISTINCT lineage) FROM _skippr_batches"), "2");
}

TEST(Sync, DisabledPipelineRefusesToRunUntilEnabled) {
  PipelineFixture f(sample_to_duckdb_config(100));
  ASSERT_EQ(f.skipprd({"query", "--sql", "DISABLE PIPELINE bikehire"}).exit_code, 0);
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ENABLE PIPELINE bikehire"), std::string::npos) << r.err;
  ASSERT_EQ(f.skipprd({"query", "--sql", "enable pipeline bikehire"}).exit_code, 0);
  EXPECT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
}

TEST(Sync, StatsAndShowPipelinesReportTheRun) {
  PipelineFixture f(sample_to_duckdb_config(5000));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  auto stats = f.skipprd({"query", "--sql", "SHOW STATS FOR bikehire", "--output", "json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find(R"({"stat":"rows_landed","value":"5000"})"), std::string::npos) << stats.out;
  auto list = f.skipprd({"query", "--sql", "SHOW PIPELINES"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("bikehire"), std::string::npos) << list.out;
  auto bad = f.skipprd({"query", "--sql", "DROP TABLE trips"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("expected one of"), std::string::npos) << bad.err;
}

// A run that is killed keeps the counts it saved while running (every 5 s), so SHOW STATS is not blind to it.
TEST(Sync, AKilledRunKeepsTheStatsItSavedWhileRunning) {
  PipelineFixture f(sample_to_duckdb_config(2000));
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--output", "text"}, f.root(),
                                {{"DATA_DIR", (f.root() / "data").string()}, {"SYNC_FREQUENCY", "900"}});
  const auto stats_file = f.root() / "data" / "pipelines" / "bikehire" / "stats.json";
  nlohmann::json saved;
  for (int i = 0; i < 200; ++i) {  // up to 10 s; the first save is due after 5 s
    saved = nlohmann::json::parse(read_text(stats_file), nullptr, false);
    if (saved.is_object() && saved.value("rows_landed", 0) == 2000) break;
    std::this_thread::sleep_for(50ms);
  }
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_process(pid), 137);
  auto stats = f.skipprd({"query", "--sql", "SHOW STATS FOR bikehire", "--output", "json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find(R"({"stat":"rows_landed","value":"2000"})"), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find(R"({"stat":"runs","value":"1"})"), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find(R"({"stat":"last_exit_code","value":"-1"})"), std::string::npos) << stats.out;
}

// SIGTERM before the source was drained: what is committed lands, but the run must not look done: exit 143 and a
// sentence, and a rerun reads the rest (issue 11, item 7). A run killed at once still counts in SHOW STATS.
TEST(Sync, AnInterruptedOnceRunExits143AndARerunReadsTheRest) {
  PipelineFixture f(sample_to_duckdb_config(1000000));
  const int pid =
      spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once", "--output", "text"}, f.root(),
                    {{"DATA_DIR", (f.root() / "data").string()}, {"BUFFER_THRESHOLD_BYTES", "500000"}});
  for (int i = 0; i < 400 && read_text(f.path("spawned.out")).find("landed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(25ms);
  }
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_process(pid), 143) << read_text(f.path("spawned.err"));
  EXPECT_NE(read_text(f.path("spawned.err")).find("stopped before its source was drained"), std::string::npos)
      << read_text(f.path("spawned.err"));
  EXPECT_EQ(read_text(f.path("spawned.out")).find("done:"), std::string::npos) << read_text(f.path("spawned.out"));
  const uint64_t first = trips_digest(f.path("out.duckdb")).rows;
  EXPECT_LT(first, 1000000u);

  const int killed = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once"}, f.root(),
                                   {{"DATA_DIR", (f.root() / "data").string()}});
  // Killed as soon as it has started (counted once its preparation is done: that takes longer on a loaded machine).
  const std::filesystem::path stats_file = f.path("data/pipelines/bikehire/stats.json");
  const std::string before = read_text(stats_file);
  for (int i = 0; i < 400 && read_text(stats_file) == before; ++i) std::this_thread::sleep_for(25ms);
  kill(killed, SIGKILL);
  EXPECT_EQ(wait_process(killed), 137);
  auto stats = f.skipprd({"query", "--sql", "SHOW STATS FOR bikehire", "--output", "json"});
  EXPECT_NE(stats.out.find(R"({"stat":"runs","value":"2"})"), std::string::npos) << stats.out;

  auto rest = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  const auto digest = trips_digest(f.path("out.duckdb"));
  EXPECT_EQ(digest.rows, 1000000u);
  EXPECT_EQ(digest.distinct_ids, 1000000u);
}

// SIGTERM while the sink is being retried: the run leaves within the 10 s grace period (a backoff sleep of up to 5 s
// used to overshoot it), with exit 75 and the batches waiting in the WAL.
TEST(Sync, SigtermWhileTheSinkIsRetriedExitsWithinTheGracePeriod) {
  PipelineFixture f(sample_to_duckdb_config(20000));
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}).exit_code, 0);  // a state: reads while blocked
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--output", "text"}, f.root(),
                                {{"DATA_DIR", (f.root() / "data").string()}, {"BUFFER_THRESHOLD_BYTES", "200000"}});
  for (int i = 0; i < 400 && read_text(f.path("spawned.out")).find("committed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(25ms);
  }
  std::this_thread::sleep_for(3s);  // the backoff has grown past a second by now
  const auto stopped_at = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  const int code = wait_process(pid);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  EXPECT_EQ(code, 75) << read_text(f.path("spawned.err"));
  EXPECT_LT(took, 11.5) << "the grace period is 10 s";
  EXPECT_NE(read_text(f.path("spawned.err")).find("wait in the WAL"), std::string::npos);
}

}  // namespace
}  // namespace skippr::test
