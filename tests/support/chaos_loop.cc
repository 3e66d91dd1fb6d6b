#include "support/chaos_loop.h"

#include <sstream>

namespace skippr::test {

std::string ChaosRuns::summary() const {
  std::string s = std::to_string(runs) + " runs, " + std::to_string(kills) + " kills:";
  for (const auto& [cause, n] : by_cause) s += " " + cause + "=" + std::to_string(n);
  return s;
}

ChaosRuns sync_until_done_under_chaos(const PipelineFixture& fixture, const std::string& pipeline,
                                      std::map<std::string, std::string> env, int seed_base, int max_runs) {
  ChaosRuns result;
  env["SKIPPR_CHAOS_MODE"] = "yes";
  while (result.runs < max_runs) {
    env["SKIPPR_CHAOS_SEED"] = std::to_string(seed_base + result.runs);
    auto r = fixture.skipprd({"sync", "--pipeline", pipeline, "--once", "--output", "text"}, env);
    ++result.runs;
    if (r.exit_code == 0) {
      result.finished = true;
      break;
    }
    if (r.exit_code != 137) {
      result.failure = "run " + std::to_string(result.runs) + " exited " + std::to_string(r.exit_code) + ": " + r.err;
      break;
    }
    ++result.kills;
  }
  if (!result.finished && result.failure.empty()) {
    result.failure = "no run finished within " + std::to_string(result.runs) + " runs";
  }
  std::istringstream log(read_text(fixture.path("data/pipelines/" + pipeline + "/chaos.log")));
  for (std::string line; std::getline(log, line); ++result.logged_kills) {
    const auto at = line.find("at failpoint ");
    result.by_cause[at == std::string::npos ? "timer" : line.substr(at + 13)]++;
  }
  return result;
}

}  // namespace skippr::test
