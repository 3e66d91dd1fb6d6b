#include "state/pipeline_state.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <random>

#include "core/env.h"
#include "core/reset_advice.h"
#include "core/time_util.h"

namespace skippr {

PipelinePaths PipelinePaths::of(const std::filesystem::path& data_dir, const std::string& pipeline) {
  PipelinePaths p;
  p.root = data_dir / "pipelines" / pipeline;
  p.wal = p.root / "wal";
  p.state = p.root / "state.json";
  p.lock = p.root / "lock";
  p.stats = p.root / "stats.json";
  p.chaos_log = p.root / "chaos.log";
  p.dead_letter = p.root / "deadletter.jsonl";
  return p;
}

Result<PipelineState> load_state(const PipelinePaths& paths, Env* env_or_null) {
  Env& env = env_or_null != nullptr ? *env_or_null : default_env();
  PipelineState state;
  auto present = env.exists(paths.state);
  if (!present) return std::unexpected(present.error());
  if (!*present) return state;
  auto text = env.read_file(paths.state);
  if (!text) return std::unexpected(text.error());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("epoch") || !j["epoch"].is_number_unsigned()) {
    return fail(ErrorKind::kCorruption,
                fmt::format("pipeline state {} is unreadable; nothing was changed. Restore it from a backup, or {}",
                            paths.state.string(), reset_advice("")));
  }
  state.epoch = j["epoch"].get<uint64_t>();
  state.enabled = j.value("enabled", true);
  state.lineage = j.value("lineage", std::string());
  state.resume_position.token = j.value("resume_position", std::string());
  state.resumed_after = j.value("resumed_after", std::string());
  state.term = j.value("term", uint64_t{0});
  if (auto requests = resync_requests_from_json(j.value("resync", std::string()))) {
    state.resync_requests = std::move(*requests);
  } else {
    return fail(ErrorKind::kCorruption, fmt::format("pipeline state {} has an unreadable resync field; {}",
                                                    paths.state.string(), reset_advice("")));
  }
  return state;
}

Status save_state(const PipelinePaths& paths, const PipelineState& state, Env* env) {
  nlohmann::json j = {{"epoch", state.epoch}, {"enabled", state.enabled}, {"lineage", state.lineage}};
  if (!state.resume_position.empty()) {
    j["resume_position"] = state.resume_position.token;
    j["resumed_after"] = state.resumed_after;
  }
  if (state.term != 0) j["term"] = state.term;
  if (!state.resync_requests.empty()) j["resync"] = resync_requests_to_json(state.resync_requests);
  return write_file_atomically(env != nullptr ? *env : default_env(), paths.state, j.dump(2) + "\n");
}

std::string resync_requests_to_json(const std::map<std::string, uint64_t>& requests) {
  return nlohmann::json(requests).dump();
}

std::optional<std::map<std::string, uint64_t>> resync_requests_from_json(const std::string& text) {
  std::map<std::string, uint64_t> out;
  if (text.empty()) return out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  for (const auto& [stream, count] : j.items()) {
    if (!count.is_number_unsigned()) return std::nullopt;
    out[stream] = count.get<uint64_t>();
  }
  return out;
}

std::string new_lineage() {
  std::random_device device;  // the kernel's CSPRNG (getrandom) on Linux
  std::string out;
  for (int word = 0; word < 4; ++word) out += fmt::format("{:08x}", static_cast<uint32_t>(device()));
  return out;
}

namespace {
// The stats file's key of a per-stream counter: "streams" for rows_landed (as written before the others were kept).
std::string stream_stats_key(std::string_view counter) {
  return counter == "rows_landed" ? "streams" : fmt::format("streams_{}", counter);
}
}  // namespace

PipelineStats stats_from_json(std::string_view text) {
  PipelineStats s;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return s;
  s.runs = j.value("runs", uint64_t{0});
  for (const auto& [name, member] : DeliveryCounts::fields()) s.*member = j.value(name, uint64_t{0});
  s.last_run_started = j.value("last_run_started", std::string());
  s.last_run_finished = j.value("last_run_finished", std::string());
  s.last_exit_code = j.value("last_exit_code", -1);
  s.last_rows_per_second = j.value("last_rows_per_second", 0.0);
  for (const auto& [name, member] : DeliveryCounts::stream_fields()) {
    const std::string key = stream_stats_key(name);
    if (!j.contains(key) || !j[key].is_object()) continue;
    for (const auto& [stream, count] : j[key].items()) {
      if (count.is_number_unsigned()) (s.*member)[stream] = count.get<uint64_t>();
    }
  }
  return s;
}

std::string stats_to_json(const PipelineStats& s) {
  nlohmann::json j = {{"runs", s.runs}};
  for (const auto& [name, member] : DeliveryCounts::fields()) j[name] = s.*member;
  j.update({{"last_run_started", s.last_run_started},
            {"last_run_finished", s.last_run_finished},
            {"last_exit_code", s.last_exit_code},
            {"last_rows_per_second", s.last_rows_per_second}});
  for (const auto& [name, member] : DeliveryCounts::stream_fields()) {
    if (!(s.*member).empty()) j[stream_stats_key(name)] = s.*member;
  }
  return j.dump(2) + "\n";
}

PipelineStats load_stats(const PipelinePaths& paths) {
  auto text = default_env().read_file(paths.stats);
  return text ? stats_from_json(*text) : PipelineStats{};
}

Status save_stats(const PipelinePaths& paths, const PipelineStats& s) {
  return write_file_atomically(default_env(), paths.stats, stats_to_json(s));
}

std::string lease_holder_description() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return fmt::format("pid {} on host {} since {}", getpid(), host, format_iso8601_micros(now_micros()));
}

Result<PipelineLock> PipelineLock::acquire(const PipelinePaths& paths, const std::string& pipeline) {
  // DATA_DIR and everything in it are private to the user running skipprd (0700 folders, 0600 files).
  if (auto made = default_env().create_dirs(paths.root); !made) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("cannot create {}: {}", paths.root.string(), made.error().message));
  }
  int fd = ::open(paths.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return fail(ErrorKind::kUnavailable, fmt::format("cannot open {}: {}", paths.lock.string(), strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    auto who = holder(paths);
    return fail(
        ErrorKind::kLocked,
        fmt::format("pipeline '{}' is already running ({}); run one sync per pipeline, or wait for it to finish",
                    pipeline, who.value_or("holder unknown")));
  }
  const std::string who = lease_holder_description();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, who.data(), who.size(), 0) != static_cast<ssize_t>(who.size())) {
    // The lock itself is held; only the holder's description is missing, which is cosmetic.
  }
  return PipelineLock(fd);
}

std::optional<std::string> PipelineLock::holder(const PipelinePaths& paths) {
  int fd = ::open(paths.lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> result;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {  // someone holds it exclusively
    char buf[512] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    result = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("holder unknown");
  }
  ::close(fd);
  return result;
}

PipelineLock::PipelineLock(PipelineLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

PipelineLock::~PipelineLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace skippr
