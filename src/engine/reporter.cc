#include "engine/reporter.h"

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/time_util.h"

namespace skippr {
namespace {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

// What a replace landing replaced in this run, so a run that emptied a table (allow_empty_replace) says so.
std::string replaced_clause(const RunTotals& t) {
  if (t.replace_landing.empty()) return "";
  if (t.syncs_replaced == 0) return fmt::format("; {}: no sync ended in this run, nothing replaced", t.replace_landing);
  const bool one = t.syncs_replaced == 1;
  const std::string syncs = fmt::format("{} sync{}", t.syncs_replaced, one ? "" : "s");
  if (t.replace_landing == "replace_table") {
    return fmt::format("; replace_table: the table was replaced by {} ({} rows landed with {} in this run)", syncs,
                       t.rows_in_replaced_syncs, one ? "it" : "them");
  }
  return fmt::format("; {}: {} replaced the partitions of {} rows landed in this run", t.replace_landing, syncs,
                     t.rows_in_replaced_syncs);
}

std::string summary_line(const RunTotals& t, int exit_code) {
  return fmt::format(
      "{} rows read, {} committed, {} landed{} in {:.2f}s ({:.0f} rows/s); {} batches landed ({} replayed "
      "from the WAL, {} already applied); {} waiting; {} dead letters{}; exit {}",
      t.rows_read, t.rows_committed, t.rows_landed,
      // A row in the rejects table is neither landed nor lost: said, so "0 landed" is not read as "nothing came".
      t.rows_rejected > 0 ? fmt::format(" and {} rejected (in the rejects table, with their reason)", t.rows_rejected)
                          : "",
      t.seconds, t.rows_per_second(), t.batches_landed, t.batches_replayed, t.already_applied, t.batches_waiting,
      t.dead_letters, replaced_clause(t), exit_code);
}

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::FILE* out) : out_(out) {}
  void sync_start(const std::string& pipeline, uint64_t epoch, uint64_t pending) override {
    emit({{"event", "sync_start"}, {"pipeline", pipeline}, {"epoch", epoch}, {"pending_batches", pending}});
  }
  void batch_committed(const BatchId& id, uint64_t rows, const RunTotals& t) override {
    emit({{"event", "batch_committed"}, {"batch_id", id.str()}, {"rows", rows}, {"wal_bytes", t.wal_bytes}});
  }
  void batch_landed(const BatchId& id, uint64_t rows, bool replayed, bool already, std::optional<double> lag,
                    const RunTotals&) override {
    nlohmann::json j = {{"event", "batch_landed"},
                        {"batch_id", id.str()},
                        {"rows", rows},
                        {"replayed", replayed},
                        {"already_applied", already}};
    if (lag) j["source_lag_seconds"] = *lag;
    emit(std::move(j));
  }
  void rows_read(const RunTotals&) override {}
  void sync_complete(const RunTotals& t, int exit_code) override {
    nlohmann::json j = {{"event", "sync_complete"}};
    for (const auto& [name, member] : DeliveryCounts::fields()) j[name] = t.*member;
    j.update({{"batches_waiting", t.batches_waiting},
              {"last_batch_landed", t.last_batch_landed},
              {"seconds", t.seconds},
              {"rows_per_second", t.rows_per_second()},
              {"exit_code", exit_code}});
    if (!t.replace_landing.empty()) {
      j["replaced"] = {{"landing", t.replace_landing}, {"syncs", t.syncs_replaced}, {"rows", t.rows_in_replaced_syncs}};
    }
    // Several streams: stream_rows_landed, stream_rows_rejected, stream_dead_letters (each where it has some).
    for (const auto& [name, member] : DeliveryCounts::stream_fields()) {
      if (!(t.*member).empty()) j[fmt::format("stream_{}", name)] = t.*member;
    }
    emit(std::move(j));
  }
  void error(const std::string& message) override { emit({{"event", "error"}, {"message", message}}); }

 private:
  void emit(nlohmann::json j) {
    j["time"] = format_iso8601_micros(now_micros());
    std::lock_guard lock(mu_);
    fmt::print(out_, "{}\n", j.dump());
    std::fflush(out_);
  }
  std::mutex mu_;
  std::FILE* out_;
};

class TextReporter final : public Reporter {
 public:
  explicit TextReporter(std::FILE* out) : out_(out) {}
  void sync_start(const std::string& pipeline, uint64_t epoch, uint64_t pending) override {
    line(fmt::format("sync {} (epoch {}): {} committed batches to land first", pipeline, epoch, pending));
  }
  void batch_committed(const BatchId& id, uint64_t rows, const RunTotals&) override {
    line(fmt::format("committed {} ({} rows)", id.str(), rows));
  }
  void batch_landed(const BatchId& id, uint64_t rows, bool replayed, bool already, std::optional<double> lag,
                    const RunTotals&) override {
    line(fmt::format("landed {} ({} rows){}{}{}", id.str(), rows, replayed ? ", replayed from the WAL" : "",
                     already ? ", already applied" : "",
                     lag ? fmt::format(", {:.3f} s after its source commit", *lag) : ""));
  }
  void rows_read(const RunTotals&) override {}
  void sync_complete(const RunTotals& t, int exit_code) override {
    line((exit_code == 0 ? "done: " : "stopped: ") + summary_line(t, exit_code));
  }
  void error(const std::string&) override {}  // the CLI prints the error itself, once, on stderr

 private:
  void line(const std::string& s) {
    std::lock_guard lock(mu_);
    fmt::print(out_, "{}\n", s);
    std::fflush(out_);
  }
  std::mutex mu_;
  std::FILE* out_;
};

// A single line redrawn at most ten times a second on stderr.
class ProgressReporter final : public Reporter {
 public:
  void sync_start(const std::string& pipeline, uint64_t epoch, uint64_t pending) override {
    pipeline_ = pipeline;
    if (pending > 0) {
      std::lock_guard lock(mu_);
      fmt::print(stderr, "{}: {} committed batches from an earlier run land first\n", pipeline, pending);
    }
    (void)epoch;
  }
  void batch_committed(const BatchId&, uint64_t, const RunTotals& t) override { draw(t, false); }
  void batch_landed(const BatchId&, uint64_t, bool, bool, std::optional<double>, const RunTotals& t) override {
    draw(t, false);
  }
  void rows_read(const RunTotals& t) override { draw(t, false); }
  void sync_complete(const RunTotals& t, int exit_code) override {
    draw(t, true);
    std::lock_guard lock(mu_);
    fmt::print(stderr, "\n{}: {}\n", pipeline_, summary_line(t, exit_code));
  }
  void error(const std::string&) override {}  // the CLI prints the error itself

 private:
  void draw(const RunTotals& t, bool force) {
    std::lock_guard lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    fmt::print(stderr, "\r\033[K{}: read {} | committed {} | landed {} | {:.0f} rows/s | WAL {}", pipeline_,
               t.rows_read, t.rows_committed, t.rows_landed, t.rows_per_second(), human_bytes(t.wal_bytes));
    std::fflush(stderr);
  }
  std::mutex mu_;
  std::string pipeline_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

std::unique_ptr<Reporter> make_reporter(OutputMode mode, std::FILE* out) {
  switch (mode) {
    case OutputMode::kJson:
      return std::make_unique<JsonReporter>(out);
    case OutputMode::kText:
      return std::make_unique<TextReporter>(out);
    case OutputMode::kProgress:
      return std::make_unique<ProgressReporter>();
  }
  return std::make_unique<TextReporter>(out);
}

}  // namespace skippr
