#include "serve/supervisor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/env.h"
#include "core/natural_order.h"
#include "engine/control.h"
#include "engine/pipeline_storage.h"
#include "engine/sync.h"
#include "serve/metrics.h"

namespace skippr {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kHistory = std::chrono::hours(1);
constexpr auto kMaxBackoff = std::chrono::seconds(60);
constexpr auto kDisabledRecheck = std::chrono::seconds(3);

// serve shows progress on its page and in /metrics: a run's events are not printed, its errors are logged.
class QuietReporter final : public Reporter {
 public:
  explicit QuietReporter(std::string pipeline) : pipeline_(std::move(pipeline)) {}
  void sync_start(const std::string&, uint64_t, uint64_t) override {}
  void batch_committed(const BatchId&, uint64_t, const RunTotals&) override {}
  void batch_landed(const BatchId&, uint64_t, bool, bool, std::optional<double>, const RunTotals&) override {}
  void rows_read(const RunTotals&) override {}
  void sync_complete(const RunTotals&, int) override {}
  void error(const std::string& message) override { spdlog::error("pipeline '{}': {}", pipeline_, message); }

 private:
  std::string pipeline_;
};

// run_sync never throws; should a reporter or the metrics do, the pipeline fails and serve goes on.
SyncResult run_sync_guarded(const Config& config, const Settings& settings, const SyncOptions& options,
                            Reporter& reporter) {
  try {
    return run_sync(config, settings, options, reporter);
  } catch (const std::exception& e) {
    return {1, false, unexpected_exception("pipeline's thread", e.what()).message, {}};
  } catch (...) {
    return {1, false, unexpected_exception("pipeline's thread", "an exception of unknown type").message, {}};
  }
}

}  // namespace

Supervisor::Stored Supervisor::load_stored(const std::string& name) const {
  Stored stored;
  auto storage = PipelineStorage::open(settings_, name);
  if (!storage) return stored;
  if (auto state = (*storage)->state().load()) stored.enabled = state->enabled;
  stored.stats = (*storage)->state().load_stats();
  return stored;
}

bool Supervisor::config_changed() const {
  auto now = default_env().read_file(config_.file);
  return !now || *now != config_text_;
}

const char* to_string(PipelineRunState state) {
  switch (state) {
    case PipelineRunState::kStarting:
      return "starting";
    case PipelineRunState::kRunning:
      return "running";
    case PipelineRunState::kRetrying:
      return "retrying";
    case PipelineRunState::kFailed:
      return "failed";
    case PipelineRunState::kDisabled:
      return "disabled";
    case PipelineRunState::kStopped:
      return "stopped";
  }
  return "unknown";
}

struct Supervisor::Slot {
  std::string name;
  std::string source;
  std::string sink;
  std::thread thread;
  std::atomic<bool> stop_run = false;  // the run's SyncOptions::stop_requested
  std::mutex action_mu;                // one action at a time, so `held` means one thing

  mutable std::mutex mu;
  std::condition_variable cv;
  PipelineRunState state = PipelineRunState::kStarting;
  bool enabled = true;
  bool in_run = false;  // inside run_sync
  bool held = false;    // an action is being carried out: do not start a run
  bool wake = false;    // end a wait (backoff, failed, disabled) now
  std::string last_error;
  int restarts = 0;
  RunTotals last_totals;  // of the last run that ended (shown until the next one registers)
  struct Point {
    Clock::time_point at;
    uint64_t rows_landed;
    uint64_t batches_waiting;
  };
  std::deque<Point> points;
  DeliveryCounts before_run;       // every run's counts before the current (or last) one, from the state store
  uint64_t landed_before_run = 0;  // rows landed by earlier runs of this serve (the history is cumulative)
};

Supervisor::Supervisor(Config config, Settings settings, std::chrono::milliseconds sample_every)
    : config_(std::move(config)), settings_(std::move(settings)), sample_every_(sample_every) {
  std::map<std::string, bool> enabled;
  if (auto shown = execute_statement({StatementKind::kShowPipelines, "", ""}, &config_, settings_)) {
    for (const auto& row : shown->rows) enabled[row.at(0)] = row.at(3) != "no";
  }
  if (auto text = default_env().read_file(config_.file)) config_text_ = *text;
  for (const auto& [name, pipeline] : config_.pipelines) {
    auto slot = std::make_unique<Slot>();
    slot->name = name;
    slot->source = config_.sources.at(pipeline.data_source).type;
    slot->sink = config_.sinks.at(pipeline.data_sink).type;
    slot->enabled = !enabled.contains(name) || enabled[name];
    slots_.push_back(std::move(slot));
  }
  // The page and /api/status list pipelines as a person reads names: p2 before p10.
  std::ranges::sort(slots_, [](const auto& a, const auto& b) { return natural_less(a->name, b->name); });
}

Supervisor::~Supervisor() { stop(); }

namespace {

// The series a pipeline has whether a run of it exists or not, so a failed, disabled or backing-off pipeline is
// seen (and alerted on) in Prometheus: skippr_pipeline_up, the state as a state set, and restarts.
void render_pipeline_states(std::string& out, const std::vector<PipelineStatus>& pipelines) {
  out +=
      "# HELP skippr_pipeline_up 1 while the pipeline runs and lands, 0 while it retries its destination, backs "
      "off, failed, is disabled or stopped (serve).\n# TYPE skippr_pipeline_up gauge\n";
  for (const auto& p : pipelines) {
    out += fmt::format("skippr_pipeline_up{{{}}} {}\n", prometheus_label("pipeline", p.name),
                       p.state == PipelineRunState::kRunning ? 1 : 0);
  }
  out +=
      "# HELP skippr_pipeline_state The pipeline's state in serve: 1 for the one it is in.\n"
      "# TYPE skippr_pipeline_state gauge\n";
  for (const auto& p : pipelines) {
    for (PipelineRunState state : kAllRunStates) {
      out += fmt::format("skippr_pipeline_state{{{},{}}} {}\n", prometheus_label("pipeline", p.name),
                         prometheus_label("state", to_string(state)), p.state == state ? 1 : 0);
    }
  }
  out +=
      "# HELP skippr_pipeline_restarts_total Runs serve started again after one ended (exit 75, 3 or unexpected).\n"
      "# TYPE skippr_pipeline_restarts_total counter\n";
  for (const auto& p : pipelines) {
    out += fmt::format("skippr_pipeline_restarts_total{{{}}} {}\n", prometheus_label("pipeline", p.name), p.restarts);
  }
}

}  // namespace

void Supervisor::start() {
  state_series_ = process_metrics().add_collector([this](std::string& out) { render_pipeline_states(out, status()); });
  for (auto& slot : slots_) {
    Slot* s = slot.get();
    s->thread = std::thread([this, s] { run_slot(*s); });
  }
  sampler_ = std::thread([this] {
    std::unique_lock lock(sampler_mu_);
    while (!stopping_) {
      lock.unlock();
      sample();
      lock.lock();
      sampler_cv_.wait_for(lock, sample_every_, [this] { return stopping_.load(); });
    }
  });
}

void Supervisor::stop() {
  if (stopping_.exchange(true)) return;
  state_series_.reset();
  for (auto& slot : slots_) {
    std::lock_guard lock(slot->mu);
    slot->stop_run = true;
    slot->wake = true;
    slot->cv.notify_all();
  }
  {
    std::lock_guard lock(sampler_mu_);  // the sampler checks stopping_ under it: the wakeup cannot fall between
    sampler_cv_.notify_all();
  }
  for (auto& slot : slots_) {
    if (slot->thread.joinable()) slot->thread.join();
  }
  if (sampler_.joinable()) sampler_.join();
}

void Supervisor::run_slot(Slot& slot) {
  auto backoff = std::chrono::milliseconds(1000);
  std::unique_lock lock(slot.mu);
  while (!stopping_) {
    // ENABLE / DISABLE PIPELINE from the CLI change the store while no run holds the pipeline: seen before each run,
    // and every few seconds while disabled.
    if (!slot.held) {
      lock.unlock();
      Stored stored = load_stored(slot.name);
      lock.lock();
      if (stored.enabled && !slot.held) slot.enabled = *stored.enabled;
      // Every earlier run's counts (SHOW STATS), to which the page adds the coming run's.
      slot.before_run = stored.stats;
      slot.last_totals = {};
    }
    if (!slot.enabled || slot.held) {
      if (!slot.enabled) slot.state = PipelineRunState::kDisabled;
      slot.cv.wait_for(lock, kDisabledRecheck, [&] { return stopping_ || slot.wake; });
      slot.wake = false;
      continue;
    }
    slot.state = PipelineRunState::kRunning;
    slot.in_run = true;
    slot.stop_run = false;
    lock.unlock();
    QuietReporter reporter(slot.name);
    SyncOptions options;
    options.pipeline = slot.name;
    options.stop_requested = &slot.stop_run;
    const auto began = Clock::now();
    const SyncResult result = run_sync_guarded(config_, settings_, options, reporter);
    lock.lock();
    slot.in_run = false;
    slot.last_totals = result.totals;
    slot.landed_before_run += result.totals.rows_landed;
    slot.cv.notify_all();  // an action waits for the run to end
    if (stopping_ || slot.held) {
      slot.state = PipelineRunState::kStopped;
      continue;
    }
    slot.last_error = result.message;
    if (result.exit_code == 1 || result.exit_code == 2 || result.exit_code == 70) {
      // Data no rerun fixes as it is, a configuration error, a WAL that failed a check, or a bug (an exception):
      // running it again would fail the same way.
      slot.state = PipelineRunState::kFailed;
      spdlog::error("pipeline '{}' stopped (exit {}), waiting for an action or a restart: {}", slot.name,
                    result.exit_code, result.message);
      slot.cv.wait(lock, [&] { return stopping_ || slot.wake; });
      slot.wake = false;
      continue;
    }
    // Retry later (75), a lease held elsewhere (3), anything else: again after a backoff, longer each time unless
    // the run lasted a while.
    if (Clock::now() - began > kMaxBackoff) backoff = std::chrono::milliseconds(1000);
    slot.state = PipelineRunState::kRetrying;
    ++slot.restarts;
    spdlog::warn("pipeline '{}' ended with exit {}; starting it again in {} ms: {}", slot.name, result.exit_code,
                 backoff.count(), result.message);
    slot.cv.wait_for(lock, backoff, [&] { return stopping_ || slot.wake; });
    slot.wake = false;
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
  slot.state = PipelineRunState::kStopped;
}

Supervisor::Slot* Supervisor::find(const std::string& name) const {
  for (const auto& slot : slots_) {
    if (slot->name == name) return slot.get();
  }
  return nullptr;
}

Result<std::string> Supervisor::act(const std::string& pipeline, const std::string& action) {
  Slot* slot = find(pipeline);
  if (slot == nullptr) {
    return fail(ErrorKind::kConfig,
                fmt::format("there is no pipeline '{}' here{}", pipeline,
                            config_changed() ? fmt::format("; {} changed since serve started: restart serve to run "
                                                           "the pipelines it now names",
                                                           config_.file.string())
                                             : ""));
  }
  StatementKind kind;
  std::string stream;
  if (action.starts_with("resync/") && action.size() > 7) {
    kind = StatementKind::kResyncStream;
    stream = action.substr(7);
  } else if (action == "enable") {
    kind = StatementKind::kEnablePipeline;
  } else if (action == "disable") {
    kind = StatementKind::kDisablePipeline;
  } else if (action == "reset") {
    kind = StatementKind::kResetPipeline;
  } else {
    return fail(ErrorKind::kConfig,
                fmt::format("'{}' is not an action; use enable, disable, reset or resync/<stream>", action));
  }
  if (kind == StatementKind::kResetPipeline && config_changed()) {
    // A reset reads the source from its start: with the configuration serve started with, not the one on disk.
    return fail(ErrorKind::kLocked, fmt::format("{} changed since serve started, and a reset would read the source "
                                                "serve started with; restart serve first, then reset '{}'",
                                                config_.file.string(), pipeline));
  }
  std::unique_lock one_action(slot->action_mu, std::try_to_lock);
  if (!one_action.owns_lock()) {
    return fail(ErrorKind::kLocked,
                fmt::format("an action on pipeline '{}' is being carried out; try again once it is done", pipeline));
  }
  std::unique_lock lock(slot->mu);
  if (stopping_) return fail(ErrorKind::kUnavailable, "serve is stopping");
  slot->held = true;
  slot->stop_run = true;  // the run lands what it committed, then returns
  slot->wake = true;
  slot->cv.notify_all();
  slot->cv.wait(lock, [&] { return !slot->in_run; });
  lock.unlock();
  auto done = execute_statement({kind, pipeline, stream}, &config_, settings_);
  lock.lock();
  if (done) {
    if (kind == StatementKind::kEnablePipeline) slot->enabled = true;
    if (kind == StatementKind::kDisablePipeline) slot->enabled = false;
    slot->last_error.clear();
  }
  slot->held = false;
  slot->wake = true;
  slot->cv.notify_all();
  if (!done) return std::unexpected(done.error());
  return done->message;
}

void Supervisor::sample() {
  const auto now = Clock::now();
  for (auto& slot : slots_) {
    auto metrics = process_metrics().find(slot->name);
    std::lock_guard lock(slot->mu);
    const RunTotals totals = metrics && slot->in_run ? metrics->totals() : slot->last_totals;
    const uint64_t landed = slot->landed_before_run + (metrics && slot->in_run ? totals.rows_landed : 0);
    slot->points.push_back({now, landed, totals.batches_waiting});
    while (!slot->points.empty() && now - slot->points.front().at > kHistory) slot->points.pop_front();
  }
}

std::vector<PipelineStatus> Supervisor::status() const {
  std::vector<PipelineStatus> out;
  const auto now = Clock::now();
  for (const auto& slot : slots_) {
    auto metrics = process_metrics().find(slot->name);
    std::lock_guard lock(slot->mu);
    PipelineStatus s;
    s.name = slot->name;
    s.source = slot->source;
    s.sink = slot->sink;
    s.state = slot->state;
    s.restarts = slot->restarts;
    s.last_error = slot->last_error;
    if (metrics && slot->in_run) {
      s.totals = metrics->totals();
      s.source_lag_seconds = metrics->source_lag_seconds();
      s.source_backlog = metrics->source_backlog();
      s.seconds_since_last_landing = metrics->seconds_since_last_landing();
      if (auto retrying = metrics->last_error()) {  // the run retries its destination: say so, and why
        s.state = PipelineRunState::kRetrying;
        s.last_error = *retrying;
      }
    } else {
      s.totals = slot->last_totals;
    }
    s.all_runs = slot->before_run;
    s.all_runs += s.totals;
    for (size_t i = 1; i < slot->points.size(); ++i) {
      const auto& a = slot->points[i - 1];
      const auto& b = slot->points[i];
      const double seconds = std::chrono::duration<double>(b.at - a.at).count();
      s.history.push_back(
          {std::chrono::duration<double>(now - b.at).count(),
           seconds > 0 && b.rows_landed >= a.rows_landed ? (b.rows_landed - a.rows_landed) / seconds : 0,
           b.batches_waiting});
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace skippr
