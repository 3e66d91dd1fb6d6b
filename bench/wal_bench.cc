// WAL benchmarks against the physical limit of the disk.
//   wal_bench append DIR [MiB]   WAL commit throughput vs a raw sequential write + fdatasync of the same bytes in the
//                                same batch sizes (1 and 8 MiB): one line per size with the ratio.
//   wal_bench group DIR          commit latency and throughput with 1, 4 and 16 concurrent committers (group commit).
//   wal_bench recover DIR [GiB]  writes GiB of committed-but-not-landed WAL, then times Wal::open + the first
//                                read_batch (what a restart does before its first sink write).
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "core/batch.h"
#include "wal/wal.h"

namespace fs = std::filesystem;
using namespace skippr;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One binary column of random (incompressible) bytes: the WAL writes about as many bytes as the raw baseline.
Batch random_batch(size_t bytes, uint64_t seed) {
  Batch b;
  b.add_column({"blob", Type::kBinary});
  std::mt19937_64 rng(seed);
  constexpr size_t kValue = 4096;
  for (size_t done = 0; done < bytes; done += kValue) {
    std::string v(kValue, '\0');
    for (size_t i = 0; i < kValue; i += 8) {
      const uint64_t r = rng();
      std::memcpy(v.data() + i, &r, 8);
    }
    b.columns[0].append_string(v);
  }
  b.rows = b.columns[0].size();
  return b;
}

std::unique_ptr<Wal> open_wal(const fs::path& dir) {
  WalOptions o;
  o.dir = dir;
  o.pipeline = "bench";
  o.epoch = 1;
  if (const char* level = std::getenv("WAL_BENCH_ZSTD_LEVEL")) o.zstd_level = std::atoi(level);  // default: the WAL's
  auto wal = Wal::open(o);
  if (!wal) throw std::runtime_error(wal.error().message);
  return std::move(*wal);
}

// Bytes per second of write + fdatasync per batch, in a fresh file.
double raw_rate(const fs::path& path, size_t batch_bytes, size_t batches) {
  // The same kind of bytes the WAL writes (random, incompressible), in case the storage compresses.
  std::string data(batch_bytes, '\0');
  std::mt19937_64 rng(batch_bytes);
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(data.data() + i, &r, 8);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path.string());
  const auto start = Clock::now();
  for (size_t i = 0; i < batches; ++i) {
    if (::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) throw std::runtime_error("write");
    if (::fdatasync(fd) != 0) throw std::runtime_error("fdatasync");
  }
  const double seconds = since(start);
  ::close(fd);
  fs::remove(path);
  return static_cast<double>(batch_bytes * batches) / seconds;
}

double wal_rate(const fs::path& dir, size_t batch_bytes, size_t batches) {
  fs::remove_all(dir);
  const Batch batch = random_batch(batch_bytes, batch_bytes);
  auto wal = open_wal(dir);
  const auto start = Clock::now();
  for (size_t i = 0; i < batches; ++i) {
    auto id = wal->commit(batch, Position{std::to_string(i)});
    if (!id) throw std::runtime_error(id.error().message);
  }
  const double seconds = since(start);
  wal.reset();
  fs::remove_all(dir);
  return static_cast<double>(batch.byte_size() * batches) / seconds;
}

void append_bench(const fs::path& dir, size_t total_mib) {
  for (size_t mib : {1, 8}) {
    const size_t bytes = mib << 20;
    const size_t batches = std::max<size_t>(4, (total_mib << 20) / bytes);
    // Alternate the two, several rounds, and keep the best of each: on a shared machine the disk's speed drifts.
    double raw = 0, wal = 0;
    for (int round = 0; round < 3; ++round) {
      raw = std::max(raw, raw_rate(dir / "raw.bin", bytes, batches));
      wal = std::max(wal, wal_rate(dir / "wal", bytes, batches));
    }
    fmt::print(
        "wal append {} MiB batches x{}: WAL {:.0f} MiB/s, raw write+fdatasync {:.0f} MiB/s (best of 3 "
        "alternating rounds), ratio {:.1f} %\n",
        mib, batches, wal / (1 << 20), raw / (1 << 20), 100 * wal / raw);
  }
}

void group_bench(const fs::path& dir) {
  const Batch batch = random_batch(4096, 1);
  for (int committers : {1, 4, 16}) {
    fs::remove_all(dir / "wal");
    auto wal = open_wal(dir / "wal");
    constexpr int kCommitsPerThread = 200;
    const int per_thread = std::max(20, kCommitsPerThread * 4 / committers);
    std::vector<std::vector<double>> latencies(committers);
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < committers; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          const auto begin = Clock::now();
          auto id = wal->commit(batch, Position{"p"});
          if (!id) throw std::runtime_error(id.error().message);
          latencies[t].push_back(since(begin) * 1e3);
        }
      });
    }
    for (auto& th : threads) th.join();
    const double seconds = since(start);
    std::vector<double> all;
    for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
    std::sort(all.begin(), all.end());
    double sum = 0;
    for (double l : all) sum += l;
    fmt::print(
        "wal group commit, {:2} committers: {:6.0f} commits/s, latency mean {:.2f} ms, p50 {:.2f} ms, p99 "
        "{:.2f} ms ({} commits of 4 KiB)\n",
        committers, all.size() / seconds, sum / all.size(), all[all.size() / 2], all[all.size() * 99 / 100],
        all.size());
    wal.reset();
  }
  fs::remove_all(dir / "wal");
}

void recover_bench(const fs::path& dir, double gib) {
  fs::remove_all(dir / "wal");
  {
    auto wal = open_wal(dir / "wal");
    const Batch batch = random_batch(8 << 20, 3);
    const size_t batches = static_cast<size_t>(gib * 1024 / 8);
    for (size_t i = 0; i < batches; ++i) {
      if (auto id = wal->commit(batch, Position{std::to_string(i)}); !id) throw std::runtime_error(id.error().message);
    }
  }
  const auto start = Clock::now();
  auto wal = open_wal(dir / "wal");
  const double opened = since(start);
  const auto pending = wal->pending();
  auto first = wal->read_batch(pending.front());
  if (!first) throw std::runtime_error(first.error().message);
  fmt::print(
      "wal recovery of {:.2f} GiB ({} batches waiting): open {:.3f} s, first batch ready {:.3f} s "
      "(page cache warm)\n",
      static_cast<double>(wal->bytes_on_disk()) / (1 << 30), pending.size(), opened, since(start));
  wal.reset();
  fs::remove_all(dir / "wal");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: wal_bench append|group|recover DIR [size]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const fs::path dir = argv[2];
  fs::create_directories(dir);
  try {
    if (mode == "append")
      append_bench(dir, argc > 3 ? std::stoul(argv[3]) : 256);
    else if (mode == "group")
      group_bench(dir);
    else if (mode == "recover")
      recover_bench(dir, argc > 3 ? std::stod(argv[3]) : 1.0);
    else
      return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "wal_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
