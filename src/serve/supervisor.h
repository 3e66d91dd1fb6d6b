// `skipprd serve`: every pipeline of skippr.yml in one long-running process, each in a thread of its own running the
// same sync as `skipprd sync` (its own lease, WAL and sink). One failing pipeline never stops the others: a run that
// ends with "retry later" (75) or a held lease (3) starts again after a backoff (1 s doubling to 60 s); data no rerun
// fixes or a bug (1: an exception in any of the run's threads ends the run, not the process), a configuration error
// (2) or a WAL that failed a check (70) waits for a person (an action, or a restart of serve). Every run's counters
// come from the metrics registry; a sampler keeps an hour of history for the page.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/connector.h"
#include "engine/reporter.h"

namespace skippr {

enum class PipelineRunState { kStarting, kRunning, kRetrying, kFailed, kDisabled, kStopped };
constexpr PipelineRunState kAllRunStates[] = {PipelineRunState::kStarting, PipelineRunState::kRunning,
                                              PipelineRunState::kRetrying, PipelineRunState::kFailed,
                                              PipelineRunState::kDisabled, PipelineRunState::kStopped};
const char* to_string(PipelineRunState state);

struct HistorySample {
  double seconds_ago = 0;
  double rows_per_second = 0;  // landed since the sample before
  uint64_t batches_waiting = 0;
};

// What the status page and /api/status show of one pipeline.
struct PipelineStatus {
  std::string name;
  std::string source;  // connector types, e.g. "Sample", "DuckDB"
  std::string sink;
  PipelineRunState state = PipelineRunState::kStarting;
  std::string last_error;  // "" when none
  int restarts = 0;
  RunTotals totals;         // the current run's, or the last one's while none runs
  DeliveryCounts all_runs;  // every run's in this DATA_DIR, the current one included (SHOW STATS)
  std::optional<double> source_lag_seconds;
  std::optional<SourceBacklog> source_backlog;  // what the source says is still waiting to be read
  std::optional<double> seconds_since_last_landing;
  std::vector<HistorySample> history;  // oldest first, at most an hour
};

class Supervisor {
 public:
  // `sample_every`: the history's step (10 s; tests use less).
  Supervisor(Config config, Settings settings, std::chrono::milliseconds sample_every);
  ~Supervisor();

  void start();
  // Stops every run (each lands what it committed within its grace period) and joins them.
  void stop();
  std::vector<PipelineStatus> status() const;
  // "enable", "disable", "reset" or "resync/<stream>": the run is stopped, the control statement executed, the run
  // started again when the pipeline is enabled. Returns the statement's message; kConfig for an unknown pipeline or
  // action, kLocked while another action on the pipeline is being carried out (one at a time per pipeline).
  Result<std::string> act(const std::string& pipeline, const std::string& action);

 private:
  struct Slot;
  void run_slot(Slot& slot);
  void sample();
  Slot* find(const std::string& name) const;
  // What the pipeline's state store holds: its enabled flag (nullopt when it cannot be read: the slot keeps its
  // own) and the counts of every run so far.
  struct Stored {
    std::optional<bool> enabled;
    DeliveryCounts stats;
  };
  Stored load_stored(const std::string& name) const;
  // skippr.yml no longer reads as it did when serve started (serve does not reload it; see docs/operations/serve.md).
  bool config_changed() const;

  Config config_;
  std::string config_text_;  // skippr.yml as serve read it
  Settings settings_;
  std::chrono::milliseconds sample_every_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<bool> stopping_ = false;
  std::thread sampler_;
  std::mutex sampler_mu_;
  std::condition_variable sampler_cv_;
  // Registered in the process's metrics while serve runs: every pipeline's state, with a run or without.
  std::shared_ptr<const void> state_series_;
};

}  // namespace skippr
