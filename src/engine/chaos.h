// Chaos mode: the process SIGKILLs itself, either after a random time or at the k-th pass through one armed
// failpoint of the commit protocol, so users (and our tests) can prove recovery. Each kill is appended to the
// pipeline's chaos.log before it happens; the seed is logged so a run can be replayed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace skippr {

struct ChaosOptions {
  double min_seconds = 5;
  double max_seconds = 30;
  uint64_t seed = 0;
  std::filesystem::path log_file;
  // SKIPPR_CHAOS_FAILPOINT / _PASS: kill at this pass through this failpoint instead of the seed's choice, to replay
  // one crash on purpose (the timer still runs: set the seconds high to rule it out).
  std::string failpoint;
  int failpoint_pass = 1;
};

// Arms the timer and one failpoint. Idempotent per process; there is no way to disarm (the process is meant to die).
void start_chaos(const ChaosOptions& options);
uint64_t random_chaos_seed();

}  // namespace skippr
