// Coalesced landing under SIGKILL: several committed batches land in one DuckDB transaction, and the process is
// killed inside such a transaction (some of its batches written, more to come) and after one committed but before
// its LANDED mark. Replays group the batches differently; each must still land once, and the table must equal an
// unkilled run's.
#include <gtest/gtest.h>

#include <regex>

#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr uint64_t kRows = 60000;
constexpr uint64_t kSeed = 11;

// Small batches and room for many of them in the land queue, so groups form.
std::map<std::string, std::string> small_batches() {
  return {{"BUFFER_THRESHOLD_BYTES", "40000"}, {"LANDING_QUEUE_BYTES", "4MiB"}};
}

ProcessResult sync_killed_at(const PipelineFixture& f, const std::string& point, int pass) {
  return f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "debug"},
                   armed_at(small_batches(), point, pass));
}

// The largest group the run's debug log says it landed (or began to land) in one transaction.
int largest_group(const std::string& log) {
  static const std::regex group(R"(landing \S+ \.\. \S+ \((\d+) batches\) in one transaction)");
  int largest = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), group), end; it != end; ++it) {
    largest = std::max(largest, std::stoi((*it)[1]));
  }
  return largest;
}

TEST(CoalescedLanding, EachBatchLandsOnceWhenKilledInsideAGroupOrBeforeItsLandedMark) {
  PipelineFixture f(sample_to_duckdb_config(kRows, kSeed));

  // Inside a coalesced transaction: at least one batch of the group written, the next not yet.
  auto inside = sync_killed_at(f, "sink.in_group", 1);
  ASSERT_EQ(inside.exit_code, 137) << "no group of several batches formed?\n" << inside.err;
  EXPECT_NE(inside.err.find("killed at failpoint sink.in_group"), std::string::npos) << inside.err;
  EXPECT_GE(largest_group(inside.err), 2) << inside.err;

  // The replay groups what waits in the WAL; killed after such a group committed, before its LANDED mark.
  auto after_commit = sync_killed_at(f, "sink.after_group_commit", 1);
  ASSERT_EQ(after_commit.exit_code, 137) << after_commit.err;
  EXPECT_GE(largest_group(after_commit.err), 2) << after_commit.err;

  // Once more inside a later group of a replay that starts with batches the destination already holds.
  auto again = sync_killed_at(f, "sink.in_group", 3);
  ASSERT_TRUE(again.exit_code == 137 || again.exit_code == 0) << again.err;

  auto done = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, small_batches());
  ASSERT_EQ(done.exit_code, 0) << done.err;
  expect_same_as_unkilled_run(f, kRows, kSeed);
}

// A group whose every batch the destination already holds commits nothing, and one whose first batches it holds
// lands only the rest: checked by landing the same batches twice, grouped differently, without a kill.
TEST(CoalescedLanding, ReplaysGroupedDifferentlyLandEachBatchOnce) {
  PipelineFixture f(sample_to_duckdb_config(kRows, kSeed));
  // First: each batch in its own transaction, killed after the fifth one committed before its LANDED mark.
  auto env = small_batches();
  env["LANDING_GROUP_BATCHES"] = "1";
  auto single = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, armed_at(env, "sink.after_commit", 5));
  ASSERT_EQ(single.exit_code, 137) << single.err;
  // Then the replay lands the waiting batches in groups (the fifth batch among them, already in the ledger).
  auto grouped = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "debug"}, small_batches());
  ASSERT_EQ(grouped.exit_code, 0) << grouped.err;
  EXPECT_GE(largest_group(grouped.err), 2) << grouped.err;
  EXPECT_NE((grouped.out + grouped.err).find(", 1 already applied)"), std::string::npos) << grouped.out << grouped.err;
  expect_same_as_unkilled_run(f, kRows, kSeed);
}

}  // namespace
}  // namespace skippr::test
