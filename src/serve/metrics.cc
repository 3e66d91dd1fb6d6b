#include "serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "state/delivery_counts.h"

namespace skippr {
namespace {

struct Family {
  const char* name;
  const char* type;  // counter, gauge, histogram
  const char* help;
};

// The delivery counters keep their SHOW STATS names, as <name>_total.
std::string counter_name(const char* field) { return fmt::format("skippr_{}_total", field); }

constexpr Family kOwnFamilies[] = {
    {"skippr_wal_bytes", "gauge", "Bytes of the pipeline's WAL on disk."},
    {"skippr_batches_waiting", "gauge", "Committed batches not landed yet."},
    {"skippr_seconds_since_last_landed_batch", "gauge", "Seconds since this run last landed a batch."},
    {"skippr_source_lag_seconds", "gauge",
     "From the source's commit of the last landed batch's oldest record to its landing (sources that tell it)."},
    {"skippr_sink_attempts_total", "counter", "Batches handed to the sink, by how the call ended."},
    {"skippr_stream_rows_landed_total", "counter",
     "The run's rows landed of each stream (a pipeline whose source names several)."},
    {"skippr_stream_rows_rejected_total", "counter",
     "The run's rows of each stream landed in its rejects table instead (a pipeline whose source names several)."},
    {"skippr_stream_dead_letters_total", "counter",
     "The run's records of each stream written to the dead letters (a pipeline whose source names several)."},
    {"skippr_wal_commit_seconds", "histogram", "Time to commit a batch to the WAL (write and fsync)."},
    {"skippr_landing_seconds", "histogram", "Time of a successful sink call landing one group of batches."},
};

const char* attempt_label(size_t i) {
  static constexpr const char* kNames[] = {"applied", "already_applied", "failed", "unknown_outcome"};
  return kNames[i];
}

std::string backlog_family(const BacklogUnit& unit) { return fmt::format("skippr_source_{}_waiting", unit.name); }

// One gauge per unit some source of this build declares (ConnectorSpec::backlog), each once.
std::vector<const BacklogUnit*> backlog_units() {
  std::vector<const BacklogUnit*> units;
  for (const ConnectorSpec& spec : connector_registry()) {
    if (!spec.is_source || !spec.backlog) continue;
    if (std::ranges::none_of(units, [&](const BacklogUnit* u) { return u->name == spec.backlog->name; })) {
      units.push_back(&*spec.backlog);
    }
  }
  return units;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}

}  // namespace

std::string prometheus_label(const std::string& name, const std::string& value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\\' || c == '"') escaped += '\\';
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += c;
  }
  return fmt::format("{}=\"{}\"", name, escaped);
}

void LatencyHistogram::observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) ++counts_[i];
  }
  ++count_;
  sum_ += seconds;
}

void LatencyHistogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  for (size_t i = 0; i < kBounds.size(); ++i) {
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, number(kBounds[i]), counts_[i]);
  }
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, number(sum_));
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
}

PipelineMetrics::PipelineMetrics(std::string pipeline, std::function<RunTotals()> totals)
    : pipeline_(std::move(pipeline)), labels_(prometheus_label("pipeline", pipeline_)), totals_(std::move(totals)) {}

void PipelineMetrics::detach(RunTotals last) {
  std::lock_guard lock(totals_mu_);
  totals_ = [last] { return last; };
}

RunTotals PipelineMetrics::totals() const {
  std::lock_guard lock(totals_mu_);
  return totals_();
}

void PipelineMetrics::note_error(const std::string& message) {
  std::lock_guard lock(mu_);
  last_error_ = message;
}

void PipelineMetrics::clear_error() {
  std::lock_guard lock(mu_);
  last_error_.reset();
}

std::optional<std::string> PipelineMetrics::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

std::optional<double> PipelineMetrics::source_lag_seconds() const {
  std::lock_guard lock(mu_);
  return source_lag_seconds_;
}

std::optional<SourceBacklog> PipelineMetrics::source_backlog() const {
  std::lock_guard lock(mu_);
  return source_backlog_;
}

void PipelineMetrics::source_backlog(SourceBacklog backlog) {
  std::lock_guard lock(mu_);
  source_backlog_ = backlog;
}

std::optional<double> PipelineMetrics::seconds_since_last_landing() const {
  std::lock_guard lock(mu_);
  if (!last_landed_) return std::nullopt;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - *last_landed_).count();
}

void PipelineMetrics::observe_commit(std::chrono::steady_clock::duration took) {
  std::lock_guard lock(mu_);
  commit_.observe(std::chrono::duration<double>(took).count());
}

void PipelineMetrics::observe_landing(std::chrono::steady_clock::duration took) {
  std::lock_guard lock(mu_);
  landing_.observe(std::chrono::duration<double>(took).count());
}

void PipelineMetrics::count_attempt(SinkAttempt outcome, uint64_t batches) {
  std::lock_guard lock(mu_);
  attempts_[static_cast<size_t>(outcome)] += batches;
}

void PipelineMetrics::landed(std::optional<double> source_lag_seconds) {
  std::lock_guard lock(mu_);
  last_landed_ = std::chrono::steady_clock::now();
  last_error_.reset();
  if (source_lag_seconds) source_lag_seconds_ = source_lag_seconds;
}

void PipelineMetrics::render(std::string& out, const std::string& family, const RunTotals& totals) const {
  for (const auto& [field, member] : DeliveryCounts::stream_fields()) {
    if (family != fmt::format("skippr_stream_{}_total", field)) continue;
    for (const auto& [stream, count] : totals.*member) {
      out += fmt::format("{}{{{},{}}} {}\n", family, labels_, prometheus_label("stream", stream), count);
    }
    return;
  }
  if (family.ends_with("_total") && family != "skippr_sink_attempts_total") {
    for (const auto& [field, member] : DeliveryCounts::fields()) {
      if (counter_name(field) == family) out += fmt::format("{}{{{}}} {}\n", family, labels_, totals.*member);
    }
    return;
  }
  if (family == "skippr_wal_bytes" || family == "skippr_batches_waiting") {
    out += fmt::format("{}{{{}}} {}\n", family, labels_,
                       family == "skippr_wal_bytes" ? totals.wal_bytes : totals.batches_waiting);
    return;
  }
  std::lock_guard lock(mu_);
  if (family == "skippr_seconds_since_last_landed_batch") {
    if (last_landed_) {
      out +=
          fmt::format("{}{{{}}} {}\n", family, labels_,
                      number(std::chrono::duration<double>(std::chrono::steady_clock::now() - *last_landed_).count()));
    }
  } else if (family == "skippr_source_lag_seconds") {
    if (source_lag_seconds_) out += fmt::format("{}{{{}}} {}\n", family, labels_, number(*source_lag_seconds_));
  } else if (source_backlog_ && family == backlog_family(*source_backlog_->unit)) {  // the other units: no sample
    out += fmt::format("{}{{{}}} {}\n", family, labels_, source_backlog_->amount);
  } else if (family == "skippr_sink_attempts_total") {
    for (size_t i = 0; i < attempts_.size(); ++i) {
      out +=
          fmt::format("{}{{{},{}}} {}\n", family, labels_, prometheus_label("outcome", attempt_label(i)), attempts_[i]);
    }
  } else if (family == "skippr_wal_commit_seconds") {
    commit_.render(out, family, labels_);
  } else if (family == "skippr_landing_seconds") {
    landing_.render(out, family, labels_);
  }
}

std::shared_ptr<PipelineMetrics> MetricsRegistry::add(std::string pipeline, std::function<RunTotals()> totals) {
  auto metrics = std::make_shared<PipelineMetrics>(std::move(pipeline), std::move(totals));
  std::lock_guard lock(mu_);
  std::erase_if(pipelines_, [](const std::weak_ptr<PipelineMetrics>& p) { return p.expired(); });
  pipelines_.push_back(metrics);
  return metrics;
}

std::shared_ptr<const MetricsRegistry::Collector> MetricsRegistry::add_collector(Collector render) {
  auto collector = std::make_shared<const Collector>(std::move(render));
  std::lock_guard lock(mu_);
  std::erase_if(collectors_, [](const auto& c) { return c.expired(); });
  collectors_.push_back(collector);
  return collector;
}

std::string MetricsRegistry::render() const {
  std::vector<std::shared_ptr<PipelineMetrics>> live;
  std::vector<std::shared_ptr<const Collector>> collectors;
  {
    std::lock_guard lock(mu_);
    for (const auto& p : pipelines_) {
      if (auto held = p.lock()) live.push_back(std::move(held));
    }
    for (const auto& c : collectors_) {
      if (auto held = c.lock()) collectors.push_back(std::move(held));
    }
  }
  std::ranges::sort(live, {}, [](const auto& p) { return p->pipeline(); });
  std::vector<RunTotals> totals;
  for (const auto& p : live) totals.push_back(p->totals());
  std::string out;
  auto family = [&](const std::string& name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (size_t i = 0; i < live.size(); ++i) live[i]->render(out, name, totals[i]);
  };
  for (const auto& [field, member] : DeliveryCounts::fields()) {
    (void)member;
    family(counter_name(field), "counter", fmt::format("The run's {} (SHOW STATS counts every run).", field).c_str());
  }
  for (const Family& f : kOwnFamilies) family(f.name, f.type, f.help);
  for (const BacklogUnit* unit : backlog_units()) family(backlog_family(*unit), "gauge", unit->help.c_str());
  for (const auto& collector : collectors) (*collector)(out);
  return out;
}

std::shared_ptr<PipelineMetrics> MetricsRegistry::find(const std::string& pipeline) const {
  std::lock_guard lock(mu_);
  for (auto it = pipelines_.rbegin(); it != pipelines_.rend(); ++it) {
    if (auto held = it->lock(); held && held->pipeline() == pipeline) return held;
  }
  return nullptr;
}

MetricsRegistry& process_metrics() {
  static MetricsRegistry registry;
  return registry;
}

}  // namespace skippr
