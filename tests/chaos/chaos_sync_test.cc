// The headline promise under fire: Sample -> DuckDB with chaos mode on (SIGKILL by timer and at every failpoint of
// the commit protocol), rerun until a run exits 0. Then the table must hold every row exactly once, with the same
// content as a run that was never killed.
#include <gtest/gtest.h>

#include "core/failpoint.h"
#include "support/chaos_loop.h"

namespace skippr::test {
namespace {

constexpr uint64_t kRows = 1500000;

TEST(Chaos, EveryRowLandsExactlyOnceWhateverInstantTheProcessIsKilledAt) {
  PipelineFixture chaos(sample_to_duckdb_config(kRows, 42));
  const auto chaos_runs = sync_until_done_under_chaos(
      chaos, "bikehire",
      {{"SKIPPR_CHAOS_MIN_SECONDS", "0.3"},
       {"SKIPPR_CHAOS_MAX_SECONDS", "2.5"},
       {"BUFFER_THRESHOLD_BYTES", "300000"},
       {"WAL_BYTES_PER_FILE", "500000"}},
      /*seed_base=*/1000, {.max_runs = 400, .each_failpoint_in_turn = true, .min_kills = 20});
  ASSERT_TRUE(chaos_runs.finished) << chaos_runs.failure;
  std::cout << "chaos: " << chaos_runs.summary() << "\n";
  EXPECT_EQ(chaos_runs.logged_kills, chaos_runs.kills);
  EXPECT_GE(chaos_runs.kills, 20);
  for (auto point : failpoint::kAll) {
    // Sample -> DuckDB lands as fast as it commits here, so groups rarely form and the two coalesced-landing
    // failpoints are seldom reached: CoalescedLanding.* kills there on purpose, and PostgresChaos reaches them.
    if (point == failpoint::kSinkInGroup || point == failpoint::kSinkAfterGroupCommit) continue;
    EXPECT_GE(chaos_runs.by_cause.count(std::string(point)), 1u) << "never killed at " << point;
  }

  expect_same_as_unkilled_run(chaos, kRows, 42);
}

// The machine is lost too: DATA_DIR (WAL, position, state) is deleted after every third kill. The ledger in the
// DuckDB file then says where the source resumes, and what the lost WAL held but never landed is read again, so
// the table still ends with every row once, equal to an unkilled run's.
TEST(Chaos, EveryRowLandsExactlyOnceWhenDataDirIsLostBetweenKills) {
  constexpr uint64_t kLossRows = 300000;
  PipelineFixture chaos(sample_to_duckdb_config(kLossRows, 7));
  const auto chaos_runs =
      sync_until_done_under_chaos(chaos, "bikehire",
                                  {{"SKIPPR_CHAOS_MIN_SECONDS", "0.2"},
                                   {"SKIPPR_CHAOS_MAX_SECONDS", "1.5"},
                                   {"BUFFER_THRESHOLD_BYTES", "200000"},
                                   {"WAL_BYTES_PER_FILE", "500000"}},
                                  /*seed_base=*/3000, {.max_runs = 400, .lose_data_dir_every = 3, .min_kills = 9});
  ASSERT_TRUE(chaos_runs.finished) << chaos_runs.failure;
  std::cout << "chaos with DATA_DIR loss: " << chaos_runs.summary() << "\n";
  EXPECT_GE(chaos_runs.kills, 9);
  EXPECT_GE(chaos_runs.data_dirs_lost, 3);

  expect_same_as_unkilled_run(chaos, kLossRows, 7);
}

}  // namespace
}  // namespace skippr::test
