// The Prometheus metrics of the pipelines this process runs (text exposition format 0.0.4): the delivery counters
// SHOW STATS adds up, WAL backlog, time since the last landing, source lag when the source tells it, sink attempts by
// outcome, and commit and landing latency histograms, each labelled by pipeline. Written here because Debian has no
// Prometheus client library for C++; the format is checked by `promtool check metrics` in the tests.
//
// A run registers its PipelineMetrics for as long as it runs; a scrape reads every registered one. Counters start at
// zero with each process (Prometheus treats the restart as a counter reset), so they equal SHOW STATS for the first
// run of a pipeline and its increase for later ones.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/connector.h"
#include "engine/reporter.h"

namespace skippr {

// How one sink call ended, as the engine's retry policy sees it.
enum class SinkAttempt { kApplied, kAlreadyApplied, kFailed, kUnknownOutcome };

class LatencyHistogram {
 public:
  // Upper bounds in seconds: from a local fsync (about a millisecond) to a warehouse transaction (tens of seconds).
  static constexpr std::array<double, 12> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30};
  void observe(double seconds);
  // The _bucket (cumulative, then +Inf), _sum and _count lines of `name` with `labels` ("pipeline=\"x\"").
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::array<uint64_t, kBounds.size()> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

class PipelineMetrics {
 public:
  // `totals`: the run's counters, read at each scrape (the run's own snapshot, taken under its lock).
  PipelineMetrics(std::string pipeline, std::function<RunTotals()> totals);
  // The run is ending: scrapes from now on read `last`, never the run.
  void detach(RunTotals last);

  void observe_commit(std::chrono::steady_clock::duration took);
  void observe_landing(std::chrono::steady_clock::duration took);
  void count_attempt(SinkAttempt outcome, uint64_t batches);
  // A batch landed now; `source_lag_seconds` when the source told its records' time.
  void landed(std::optional<double> source_lag_seconds);
  // What the source said is still waiting after its latest poll (Kafka consumer lag, files, CDC WAL bytes).
  void source_backlog(SourceBacklog backlog);

  // The run's latest failure while it retries (a sink that cannot be reached), cleared when a landing succeeds.
  void note_error(const std::string& message);
  void clear_error();
  std::optional<std::string> last_error() const;
  RunTotals totals() const;
  std::optional<double> source_lag_seconds() const;
  std::optional<SourceBacklog> source_backlog() const;
  std::optional<double> seconds_since_last_landing() const;

  const std::string& pipeline() const { return pipeline_; }
  // The run's samples for the metric family `family` (see metrics.cc), appended to `out`. `totals` is one
  // snapshot of the run's counts (totals()) taken for the whole scrape, so the families of one scrape agree (the
  // batches waiting are the committed minus the landed).
  void render(std::string& out, const std::string& family, const RunTotals& totals) const;

 private:
  std::string pipeline_;
  std::string labels_;            // pipeline="<name>", escaped
  mutable std::mutex totals_mu_;  // held while totals_ runs, so detach() waits for a scrape that is reading the run
  std::function<RunTotals()> totals_;
  mutable std::mutex mu_;
  std::optional<std::string> last_error_;
  LatencyHistogram commit_;
  LatencyHistogram landing_;
  std::array<uint64_t, 4> attempts_{};
  std::optional<std::chrono::steady_clock::time_point> last_landed_;
  std::optional<double> source_lag_seconds_;
  std::optional<SourceBacklog> source_backlog_;
};

class MetricsRegistry {
 public:
  // Appends whole families (HELP, TYPE, samples) beside the runs': what a process knows of pipelines whether a run
  // of them is registered or not (serve: each pipeline's state). Called without the registry's lock held.
  using Collector = std::function<void(std::string& out)>;
  // Rendered for as long as the returned handle lives; a render already running when it goes may still call it
  // once, so what the collector reads must outlive every endpoint that renders (see run_serve_command).
  std::shared_ptr<const Collector> add_collector(Collector render);

  // Registered until the returned handle is gone (a run's lifetime).
  std::shared_ptr<PipelineMetrics> add(std::string pipeline, std::function<RunTotals()> totals);
  // Every family, with its HELP and TYPE, and every registered pipeline's samples.
  std::string render() const;
  // The registered run of `pipeline`, or null.
  std::shared_ptr<PipelineMetrics> find(const std::string& pipeline) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::weak_ptr<PipelineMetrics>> pipelines_;
  std::vector<std::weak_ptr<const Collector>> collectors_;
};

// The process's registry (sync and serve register their runs there; the endpoint serves it).
MetricsRegistry& process_metrics();

// pipeline="..." with the value escaped as the text format requires (backslash, quote, newline).
std::string prometheus_label(const std::string& name, const std::string& value);

}  // namespace skippr
