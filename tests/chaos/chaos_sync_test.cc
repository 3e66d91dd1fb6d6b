// The headline promise under fire: Sample -> DuckDB with chaos mode on (SIGKILL by timer and at every failpoint of
// the commit protocol), rerun until a run exits 0. Then the table must hold every row exactly once, with the same
// content as a run that was never killed.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "core/failpoint.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr uint64_t kRows = 1000000;

TEST(Chaos, EveryRowLandsExactlyOnceWhateverInstantTheProcessIsKilledAt) {
  PipelineFixture chaos(sample_to_duckdb_config(kRows, 42));
  const std::map<std::string, std::string> env = {
      {"SKIPPR_CHAOS_MODE", "yes"},           {"SKIPPR_CHAOS_MIN_SECONDS", "0.3"},
      {"SKIPPR_CHAOS_MAX_SECONDS", "2.5"},    {"BUFFER_THRESHOLD_BYTES", "300000"},
      {"WAL_BYTES_PER_FILE", "500000"},
  };
  int runs = 0, kills = 0;
  int exit_code = -1;
  while (exit_code != 0 && runs < 400) {
    auto run_env = env;
    run_env["SKIPPR_CHAOS_SEED"] = std::to_string(1000 + runs);  // reproducible: the seed of run n is 1000 + n
    auto r = chaos.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "text"}, run_env);
    ++runs;
    exit_code = r.exit_code;
    ASSERT_TRUE(exit_code == 0 || exit_code == 137) << "run " << runs << " exited " << exit_code << ": " << r.err;
    kills += exit_code == 137;
  }
  ASSERT_EQ(exit_code, 0) << "no run finished within " << runs << " runs";

  // Which failpoints killed a process, from the chaos log each kill appends to before it happens.
  std::map<std::string, int> by_cause;
  std::istringstream log(read_text(chaos.path("data/pipelines/bikehire/chaos.log")));
  int logged = 0;
  for (std::string line; std::getline(log, line); ++logged) {
    const auto at = line.find("at failpoint ");
    by_cause[at == std::string::npos ? "timer" : line.substr(at + 13)]++;
  }
  std::string causes;
  for (const auto& [cause, n] : by_cause) causes += cause + "=" + std::to_string(n) + " ";
  std::cout << "chaos: " << runs << " runs, " << kills << " kills: " << causes << "\n";
  EXPECT_EQ(logged, kills);
  EXPECT_GE(kills, 20);
  for (auto point : failpoint::kAll) EXPECT_GE(by_cause[std::string(point)], 1) << "never killed at " << point;

  const TableDigest got = trips_digest(chaos.path("out.duckdb"));
  EXPECT_EQ(got.rows, kRows);
  EXPECT_EQ(got.distinct_ids, kRows);

  PipelineFixture calm(sample_to_duckdb_config(kRows, 42));
  auto r = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, trips_digest(calm.path("out.duckdb")));
}

}  // namespace
}  // namespace skippr::test
