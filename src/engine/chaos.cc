#include "engine/chaos.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "core/failpoint.h"

namespace skippr {
namespace {

std::string g_log_file;
std::string_view g_armed_failpoint;
std::atomic<int> g_hits_left{0};

// Records the kill (write(2) reaches the page cache, which survives SIGKILL) and dies.
[[noreturn]] void kill_now(const std::string& why) {
  const std::string line = fmt::format("pid {} killed {}\n", getpid(), why);
  int fd = ::open(g_log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    [[maybe_unused]] ssize_t n = ::write(fd, line.data(), line.size());
    ::close(fd);
  }
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, ("chaos: " + line).data(), line.size() + 7);
  ::kill(getpid(), SIGKILL);
  std::abort();  // unreachable
}

void on_failpoint(std::string_view name) {
  if (name != g_armed_failpoint) return;
  if (g_hits_left.fetch_sub(1) == 1) kill_now(fmt::format("at failpoint {}", name));
}

}  // namespace

uint64_t random_chaos_seed() { return std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32); }

void start_chaos(const ChaosOptions& options) {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return;
  g_log_file = options.log_file.string();
  std::mt19937_64 rng(options.seed);
  const double seconds = std::uniform_real_distribution<double>(options.min_seconds, options.max_seconds)(rng);
  const auto& points = failpoint::kArmedAtRandom;
  g_armed_failpoint = points[std::uniform_int_distribution<size_t>(0, std::size(points) - 1)(rng)];
  g_hits_left = std::uniform_int_distribution<int>(1, 6)(rng);
  if (auto point = failpoint::known_point(options.failpoint)) {
    g_armed_failpoint = *point;
    g_hits_left = options.failpoint_pass;
  }
  spdlog::warn(
      "chaos mode is on: seed {} (replay with SKIPPR_CHAOS_SEED={}); SIGKILL after {:.1f}s or at pass {} "
      "through {}",
      options.seed, options.seed, seconds, g_hits_left.load(), g_armed_failpoint);
  failpoint::set_handler(&on_failpoint);
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    kill_now(fmt::format("by timer after {:.1f}s", seconds));
  }).detach();
}

}  // namespace skippr
