// Fast recovery end to end: a restart with GiB of committed but not landed WAL, timed from the start of the real
// skipprd process to its first sink write (the first `batch_landed` event of `--output json`, which follows the
// DuckDB commit of that batch and its ledger row).
//   recovery_bench DIR [GiB]
// The backlog is what a blocked engine leaves behind: Sample batches cut at BUFFER_THRESHOLD_BYTES, encoded and
// committed to the pipeline's WAL with the Sample source's own positions. It is written here through the Wal API
// rather than by skipprd, because the engine's bounded queues stop the reader a few batches ahead of a blocked sink:
// a real backlog of 1 GiB only builds up over many runs. The timed restart is the real binary, with the defaults.
// Two figures: page cache warm (just written), and cold for the WAL (its pages dropped with posix_fadvise).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.h"
#include "state/pipeline_state.h"
#include "wal/wal.h"

namespace fs = std::filesystem;
using namespace skippr;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

template <class R>
auto check(R&& result, const char* what) {
  if (!result) throw std::runtime_error(fmt::format("{}: {}", what, result.error().message));
  if constexpr (!std::is_void_v<typename std::remove_cvref_t<R>::value_type>) return std::move(*result);
}

Config write_config(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "skippr.yml") << R"(data_sources:
  sample:
    Sample: { rows: 1000000000, seed: 1 }
data_sinks:
  warehouse:
    DuckDB: { path: out.duckdb, table: trips }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
)";
  return check(load_config(dir / "skippr.yml"), "config");
}

// Commits Sample batches, cut as the engine cuts them, until the WAL holds `bytes`. Returns the batch count.
uint64_t write_backlog(const Config& config, const Settings& settings, uint64_t bytes) {
  const ConnectorConfig& sample = config.sources.at("sample");
  ConnectorContext ctx;
  ctx.name = sample.name;
  ctx.pipeline = "bench";
  ctx.params = sample.params;
  ctx.pipeline_dir = PipelinePaths::of(settings.data_dir, "bench").root;
  auto source = check(sample.spec->make_source(ctx), "sample source");
  check(source->open(), "sample open");
  WalOptions options;
  options.dir = PipelinePaths::of(settings.data_dir, "bench").wal;
  options.pipeline = "bench";
  options.epoch = 1;  // a pipeline's first epoch; no state file means epoch 1
  options.bytes_per_file = settings.wal_bytes_per_file;
  auto wal = check(Wal::open(options), "WAL");
  Batch pending;
  while (wal->bytes_on_disk() < bytes) {
    Budget budget;
    budget.max_bytes = settings.buffer_threshold_bytes - std::min(settings.buffer_threshold_bytes, pending.byte_size());
    auto polled = check(source->poll(budget), "poll");
    if (pending.rows == 0) {
      pending = std::move(polled.records);
    } else {
      check(pending.append(polled.records), "append");
    }
    if (pending.byte_size() >= settings.buffer_threshold_bytes) {
      check(wal->commit(pending, polled.position_after), "commit");
      pending = Batch{};
    }
  }
  return wal->last_committed_seq();
}

// Drops the WAL's pages from the page cache (they are clean: every segment was synced).
void drop_cached_wal(const fs::path& wal_dir) {
  for (const auto& entry : fs::directory_iterator(wal_dir)) {
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

struct Restart {
  double sync_start = 0;    // the WAL is open and scanned
  double first_landed = 0;  // the first replayed batch is committed in DuckDB
  std::string first_event;
};

// Starts skipprd, reads its JSON events until the first batch_landed, then kills it (a SIGTERM would let it land
// the whole backlog first; a kill -9 is a restart the WAL is made for).
Restart timed_restart(const fs::path& skipprd, const fs::path& dir) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe");
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    if (::chdir(dir.c_str()) != 0) _exit(127);
    ::setenv("DATA_DIR", (dir / "data").c_str(), 1);
    ::execl(skipprd.c_str(), "skipprd", "sync", "--pipeline", "bench", "--output", "json", "--config", "skippr.yml",
            static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(out[1]);
  std::FILE* events = ::fdopen(out[0], "r");
  Restart r;
  char line[4096];
  while (std::fgets(line, sizeof line, events) != nullptr) {
    const std::string event(line);
    if (r.sync_start == 0 && event.find(R"("event":"sync_start")") != std::string::npos) r.sync_start = since(start);
    if (event.find(R"("event":"batch_landed")") != std::string::npos) {
      r.first_landed = since(start);
      r.first_event = event.substr(0, event.find_last_not_of('\n') + 1);
      break;
    }
  }
  ::kill(pid, SIGKILL);
  while (std::fgets(line, sizeof line, events) != nullptr) {  // drain so it never blocks on a full pipe
  }
  std::fclose(events);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (r.first_landed == 0) throw std::runtime_error(fmt::format("skipprd landed nothing (status {})", status));
  if (r.first_event.find(R"("replayed":true)") == std::string::npos) {
    throw std::runtime_error("the first batch landed was not a replayed one: " + r.first_event);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: recovery_bench SKIPPRD DIR [GiB]\n");
    return 2;
  }
  const fs::path skipprd = fs::absolute(argv[1]);
  const fs::path dir = fs::absolute(argv[2]);
  const double gib = argc > 3 ? std::stod(argv[3]) : 1.0;
  try {
    fs::remove_all(dir);
    const Config config = write_config(dir);
    auto settings = check(settings_from_env(), "settings");
    settings.data_dir = dir / "data";
    const fs::path wal_dir = PipelinePaths::of(settings.data_dir, "bench").wal;
    for (const bool cold : {false, true}) {
      fs::remove_all(settings.data_dir);
      fs::remove(dir / "out.duckdb");
      fs::remove(dir / "out.duckdb.wal");
      const auto start = Clock::now();
      const uint64_t batches = write_backlog(config, settings, static_cast<uint64_t>(gib * (1ull << 30)));
      const double written = since(start);
      uint64_t wal_bytes = 0;
      for (const auto& entry : fs::directory_iterator(wal_dir)) wal_bytes += entry.file_size();
      if (cold) drop_cached_wal(wal_dir);
      const Restart r = timed_restart(skipprd, dir);
      fmt::print(
          "recovery end to end, {:.2f} GiB of WAL waiting ({} batches, written in {:.1f} s), page cache {}: "
          "skipprd start -> WAL open {:.3f} s -> first sink write (DuckDB commit) {:.3f} s (goal < 2 s)\n",
          static_cast<double>(wal_bytes) / (1ull << 30), batches, written, cold ? "cold for the WAL" : "warm",
          r.sync_start, r.first_landed);
    }
    fs::remove_all(dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "recovery_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
