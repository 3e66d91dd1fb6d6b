// The engine's failure policy for the disk under the WAL, through the I/O seam: a whole Sample -> DuckDB sync runs
// in-process with a fault-injecting Env under its WAL. A failed fsync stops the run at once (exit 75, a clear message,
// fsync never retried); a full disk stops intake (exit 75, "the disk is full" and where). In both cases a rerun on a
// healthy disk delivers every row exactly once: nothing committed was lost.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "config/config.h"
#include "core/env.h"
#include "engine/reporter.h"
#include "engine/sync.h"
#include "support/fault_env.h"
#include "support/pipeline_fixture.h"

namespace skippr {
namespace {

using testing::FaultEnv;
using testing::Op;

constexpr uint64_t kRows = 20000;

class WalFaultsSync : public ::testing::Test {
 protected:
  WalFaultsSync() : fixture_(test::sample_to_duckdb_config(kRows, 7, "out.duckdb")) {}

  SyncResult sync(Env* wal_env) {
    auto config = load_config(fixture_.path("skippr.yml"));
    EXPECT_TRUE(config) << config.error().message;
    Settings settings;
    settings.data_dir = fixture_.path("data");
    settings.buffer_threshold_bytes = 64 << 10;  // dozens of batches
    settings.wal_bytes_per_file = 256 << 10;     // and several segments
    settings.sink_retry_seconds = 1;
    SyncOptions options;
    options.pipeline = "bikehire";
    options.once = true;
    options.wal_env = wal_env;
    std::FILE* sink = std::fopen("/dev/null", "w");
    auto reporter = make_reporter(OutputMode::kText, sink);
    SyncResult result = run_sync(*config, settings, options, *reporter);
    reporter.reset();
    std::fclose(sink);
    return result;
  }

  // A rerun on a healthy disk finishes the job: every row once.
  void expect_rerun_delivers_every_row_once() {
    SyncResult rerun = sync(nullptr);
    ASSERT_EQ(rerun.exit_code, 0) << rerun.message;
    const test::TableDigest digest = test::trips_digest(fixture_.path("out.duckdb"));
    EXPECT_EQ(digest.rows, kRows);
    EXPECT_EQ(digest.distinct_ids, kRows) << "a row landed twice";
    test::PipelineFixture fresh(test::sample_to_duckdb_config(kRows, 7, "out.duckdb"));
    ASSERT_EQ(fresh.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
    EXPECT_EQ(digest, test::trips_digest(fresh.path("out.duckdb"))) << "the content differs from an undisturbed run";
  }

  test::PipelineFixture fixture_;
};

TEST_F(WalFaultsSync, AFailedFsyncStopsTheRunAtOnceAndIsNeverRetried) {
  FaultEnv env(default_env());
  env.set_fault({.op = Op::kSync, .err = EIO, .path_part = ".wal", .skip = 5, .sticky = false, .torn_bytes = 0});
  SyncResult result = sync(&env);
  EXPECT_EQ(result.exit_code, 75) << result.message;
  EXPECT_NE(result.message.find("fdatasync"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("may not be durable"), std::string::npos) << result.message;
  EXPECT_EQ(env.injected(), 1u);
  EXPECT_EQ(env.syncs_after_failed_sync(), 0u) << "fsync retried on the descriptor whose fsync failed";
  EXPECT_LT(result.totals.rows_committed, kRows) << "the run went on after the failed fsync";
  expect_rerun_delivers_every_row_once();
}

TEST_F(WalFaultsSync, AFullDiskStopsIntakeSaysWhereAndLosesNothingCommitted) {
  FaultEnv env(default_env());
  // From the 8th append to a segment on, the disk is full; the failing append writes part of its record first.
  env.set_fault({.op = Op::kAppend, .err = ENOSPC, .path_part = ".wal", .skip = 7, .sticky = true, .torn_bytes = 100});
  SyncResult result = sync(&env);
  EXPECT_EQ(result.exit_code, 75) << result.message;
  EXPECT_NE(result.message.find("the disk is full"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find(fixture_.path("data").string()), std::string::npos) << "does not say where";
  EXPECT_GT(result.totals.rows_committed, 0u);
  EXPECT_LT(result.totals.rows_committed, kRows) << "intake did not stop";
  expect_rerun_delivers_every_row_once();
}

}  // namespace
}  // namespace skippr
