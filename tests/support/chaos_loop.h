// Test support: the chaos kill loop every crash test shares. Rerun `skipprd sync --once` with chaos mode on until a
// run exits 0, then count the kills from the pipeline's chaos.log (each kill is logged before it happens).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "support/pipeline_fixture.h"

namespace skippr::test {

struct ChaosRuns {
  bool finished = false;  // a run exited 0 within the allowed runs, and every other run was a SIGKILL
  int runs = 0;
  int kills = 0;                        // runs that ended in SIGKILL (exit 137)
  std::map<std::string, int> by_cause;  // from chaos.log: "timer" or the failpoint's name
  int logged_kills = 0;
  int data_dirs_lost = 0;       // times DATA_DIR was deleted between runs
  int windows_widened = 0;      // times the timer's window doubled after a row of timer kills (chaos_loop.cc)
  std::string failure;          // why it did not finish
  std::string summary() const;  // "N runs, K kills: cause=n ..."
};

// How a chaos loop runs. `max_runs`: give up after that many. `lose_data_dir_every` = n > 0 deletes DATA_DIR after
// every n-th kill, as if the machine were replaced: an exactly-once destination must then still end up with every
// row once. `each_failpoint_in_turn` arms run n at failpoint::kAll[n % size] (passes 1 to 3) instead of the seed's
// choice, so every failpoint is armed within a few runs (the timer still strikes at random); `extra_failpoints` join
// the rotation (failpoint::kSinkSpecific points the sink under test passes).
// `min_kills`: until that many runs were killed, each run is armed at the 1st to 3rd pass through the WAL's own
// commit (before or after its fdatasync, in turn), which every batch of every pipeline passes. The kill count then
// depends on the number of batches, not on how fast the machine is (a fast machine would otherwise finish between
// two timer kills); the timer still strikes at random in those runs, and the later runs are armed as above.
// Twelve timer kills in a row (runs that never reached the point they were armed at: start-up alone outlasted the
// window on a slow or loaded machine) double the timer's window, so the loop cannot starve; ChaosRuns counts it.
struct ChaosOptions {
  int max_runs = 300;
  int lose_data_dir_every = 0;
  bool each_failpoint_in_turn = false;
  std::vector<std::string_view> extra_failpoints = {};
  int min_kills = 0;
};

// `env` is added to every run; SKIPPR_CHAOS_MODE=yes and SKIPPR_CHAOS_SEED=<seed_base + run> are set here, so run n
// can be replayed with that seed.
ChaosRuns sync_until_done_under_chaos(const PipelineFixture& fixture, const std::string& pipeline,
                                      std::map<std::string, std::string> env, int seed_base,
                                      const ChaosOptions& options = {});

// After a source's workload stopped: runs under chaos until one finishes, each given up to 4 s before the timer
// strikes (so one can reach the end on a busy machine too), then one run without chaos (a run that caught up while
// the workload ran is not enough). `finished` only when both did; `failure` says which did not.
ChaosRuns catch_up_under_chaos(const PipelineFixture& fixture, const std::string& pipeline,
                               std::map<std::string, std::string> env, int seed_base);

// `env` with chaos mode armed to kill at the `pass`-th pass through failpoint `point`, the timer ruled out: to replay
// one crash on purpose.
std::map<std::string, std::string> armed_at(std::map<std::string, std::string> env, const std::string& point,
                                            int pass = 1);

// `kills` runs of `sync --once`, each armed in turn inside the sink's own landing (sink.in_transaction, then
// sink.after_commit, passes 1 to 3), DATA_DIR deleted after every third: the crashes a sink without one transaction
// around its statements must survive, before a chaos loop finishes the job. "" when every run was killed there, else
// what a run did instead.
std::string kill_inside_landing(const PipelineFixture& fixture, const std::string& pipeline,
                                const std::map<std::string, std::string>& env, int kills);

// The same loop until `deadline`, whether runs finish or are killed: for a source that is written to meanwhile, which
// a run may not catch up with before chaos strikes. `finished` = no run exited otherwise than 0 or SIGKILL.
ChaosRuns sync_under_chaos_until(const PipelineFixture& fixture, const std::string& pipeline,
                                 std::map<std::string, std::string> env, int seed_base,
                                 std::chrono::steady_clock::time_point deadline);

}  // namespace skippr::test
