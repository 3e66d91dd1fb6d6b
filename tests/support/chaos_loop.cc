#include "support/chaos_loop.h"

#include "core/failpoint.h"

#include <filesystem>
#include <functional>
#include <sstream>

namespace skippr::test {

std::string ChaosRuns::summary() const {
  std::string s = std::to_string(runs) + " runs, " + std::to_string(kills) + " kills";
  if (data_dirs_lost > 0) s += ", " + std::to_string(data_dirs_lost) + " DATA_DIRs deleted";
  if (windows_widened > 0) s += ", timer window doubled " + std::to_string(windows_widened) + "x";
  s += ":";
  for (const auto& [cause, n] : by_cause) s += " " + cause + "=" + std::to_string(n);
  return s;
}

namespace {

// Adds the kills chaos.log records to `result` (each kill is logged before it happens).
void count_logged_kills(const PipelineFixture& fixture, const std::string& pipeline, ChaosRuns& result) {
  std::istringstream log(read_text(fixture.path("data/pipelines/" + pipeline + "/chaos.log")));
  for (std::string line; std::getline(log, line); ++result.logged_kills) {
    const auto at = line.find("at failpoint ");
    result.by_cause[at == std::string::npos ? "timer" : line.substr(at + 13)]++;
  }
}

constexpr int kTimerKillsBeforeWidening = 12;

// Whether the newest kill chaos.log records was the timer's (not a failpoint's).
bool last_kill_by_timer(const PipelineFixture& fixture, const std::string& pipeline) {
  const std::string log = read_text(fixture.path("data/pipelines/" + pipeline + "/chaos.log"));
  const size_t end = log.find_last_not_of('\n');
  if (end == std::string::npos) return false;
  const size_t newline = log.rfind('\n', end);
  const size_t start = newline == std::string::npos ? 0 : newline + 1;
  return std::string_view(log).substr(start, end + 1 - start).find("at failpoint ") == std::string_view::npos;
}

// Reruns `sync --once` in chaos mode while `more(result)` holds; every run must exit 0 or be SIGKILLed.
ChaosRuns chaos_loop(const PipelineFixture& fixture, const std::string& pipeline,
                     std::map<std::string, std::string> env, int seed_base,
                     const std::function<bool(const ChaosRuns&)>& more, const ChaosOptions& options = {}) {
  std::vector<std::string_view> rotation(std::begin(failpoint::kAll), std::end(failpoint::kAll));
  rotation.insert(rotation.end(), options.extra_failpoints.begin(), options.extra_failpoints.end());
  constexpr std::string_view kEveryBatchPasses[] = {failpoint::kWalBeforeFsync, failpoint::kWalAfterFsync};
  ChaosRuns result;
  size_t turns = 0;      // runs armed from the rotation
  size_t owed_runs = 0;  // runs armed to pay a kill owed to min_kills
  int timer_kills_in_a_row = 0;
  env["SKIPPR_CHAOS_MODE"] = "yes";
  while (more(result)) {
    auto run_env = env;
    run_env["SKIPPR_CHAOS_SEED"] = std::to_string(seed_base + result.runs);
    // While kills are owed, every other run still takes its turn in the rotation, so each point is armed early.
    const bool owed = result.kills < options.min_kills && !(options.each_failpoint_in_turn && result.runs % 2 == 0);
    if (owed) {
      run_env["SKIPPR_CHAOS_FAILPOINT"] = std::string(kEveryBatchPasses[owed_runs % 2]);
      run_env["SKIPPR_CHAOS_FAILPOINT_PASS"] = std::to_string(1 + (owed_runs / 2) % 3);
      ++owed_runs;
    } else if (options.each_failpoint_in_turn) {
      const size_t points = rotation.size();
      run_env["SKIPPR_CHAOS_FAILPOINT"] = std::string(rotation[turns % points]);
      run_env["SKIPPR_CHAOS_FAILPOINT_PASS"] = std::to_string(1 + (turns / points) % 3);
      ++turns;
    }
    auto r = fixture.skipprd({"sync", "--pipeline", pipeline, "--once", "--output", "text"}, run_env);
    ++result.runs;
    if (r.exit_code == 0) {
      result.finished = true;
      continue;
    }
    if (r.exit_code != 137) {
      result.finished = false;
      result.failure = "run " + std::to_string(result.runs) + " exited " + std::to_string(r.exit_code) + ": " + r.err;
      break;
    }
    result.finished = false;
    ++result.kills;
    // Runs the timer ends before they reach the point they were armed at may make no progress at all on a slow or
    // loaded machine (their start-up alone can take longer than the window), and the loop would never end. After
    // kTimerKillsBeforeWidening of them in a row, the window doubles: kills stay at random instants, and every
    // run is still killed, but a run gets time to land something.
    if (last_kill_by_timer(fixture, pipeline) && ++timer_kills_in_a_row >= kTimerKillsBeforeWidening) {
      timer_kills_in_a_row = 0;
      for (const char* bound : {"SKIPPR_CHAOS_MIN_SECONDS", "SKIPPR_CHAOS_MAX_SECONDS"}) {
        if (auto it = env.find(bound); it != env.end()) it->second = std::to_string(std::stod(it->second) * 2);
      }
      ++result.windows_widened;
    } else if (!last_kill_by_timer(fixture, pipeline)) {
      timer_kills_in_a_row = 0;
    }
    if (options.lose_data_dir_every > 0 && result.kills % options.lose_data_dir_every == 0) {
      count_logged_kills(fixture, pipeline, result);
      std::filesystem::remove_all(fixture.path("data"));
      ++result.data_dirs_lost;
    }
  }
  count_logged_kills(fixture, pipeline, result);
  return result;
}

}  // namespace

std::map<std::string, std::string> armed_at(std::map<std::string, std::string> env, const std::string& point,
                                            int pass) {
  env["SKIPPR_CHAOS_MODE"] = "yes";
  env["SKIPPR_CHAOS_FAILPOINT"] = point;
  env["SKIPPR_CHAOS_FAILPOINT_PASS"] = std::to_string(pass);
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "900";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "900";
  return env;
}

std::string kill_inside_landing(const PipelineFixture& fixture, const std::string& pipeline,
                                const std::map<std::string, std::string>& env, int kills) {
  for (int i = 0; i < kills; ++i) {
    const std::string point(i % 2 ? failpoint::kSinkAfterCommit : failpoint::kSinkInTransaction);
    auto r = fixture.skipprd({"sync", "--pipeline", pipeline, "--once"}, armed_at(env, point, 1 + (i / 2) % 3));
    if (r.exit_code != 137) {
      return "run " + std::to_string(i + 1) + " armed at " + point + " exited " + std::to_string(r.exit_code) + ": " +
             r.err;
    }
    if (i % 3 == 2) std::filesystem::remove_all(fixture.path("data"));
  }
  return "";
}

ChaosRuns catch_up_under_chaos(const PipelineFixture& fixture, const std::string& pipeline,
                               std::map<std::string, std::string> env, int seed_base) {
  auto calm_env = env;
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "4.0";
  ChaosRuns runs = sync_until_done_under_chaos(fixture, pipeline, std::move(env), seed_base);
  if (!runs.finished) return runs;
  auto calm = fixture.skipprd({"sync", "--pipeline", pipeline, "--once"}, calm_env);
  runs.runs += 1;
  if (calm.exit_code != 0) {
    runs.finished = false;
    runs.failure = fmt::format("the run without chaos after catching up exited {}: {}", calm.exit_code, calm.err);
  }
  return runs;
}

ChaosRuns sync_until_done_under_chaos(const PipelineFixture& fixture, const std::string& pipeline,
                                      std::map<std::string, std::string> env, int seed_base,
                                      const ChaosOptions& options) {
  ChaosRuns result = chaos_loop(
      fixture, pipeline, std::move(env), seed_base,
      [&](const ChaosRuns& r) { return !r.finished && r.failure.empty() && r.runs < options.max_runs; }, options);
  if (!result.finished && result.failure.empty()) {
    result.failure = "no run finished within " + std::to_string(result.runs) + " runs";
  }
  return result;
}

ChaosRuns sync_under_chaos_until(const PipelineFixture& fixture, const std::string& pipeline,
                                 std::map<std::string, std::string> env, int seed_base,
                                 std::chrono::steady_clock::time_point deadline) {
  ChaosRuns result = chaos_loop(fixture, pipeline, std::move(env), seed_base,
                                [&](const ChaosRuns&) { return std::chrono::steady_clock::now() < deadline; });
  if (result.failure.empty()) result.finished = true;  // every run ended as chaos mode ends runs, or finished
  return result;
}

}  // namespace skippr::test
