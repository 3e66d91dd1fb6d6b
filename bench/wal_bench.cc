// WAL benchmarks against the physical limit of the disk.
//   wal_bench append DIR [MiB]   WAL throughput vs a raw sequential write + fdatasync of the same bytes (the encoded
//                                record) in the same batch sizes (1 and 8 MiB). Three WAL figures per size:
//                                - append+commit of encoded batches: what the WAL itself costs over the disk; the
//                                  engine encodes in the reader stage, off the commit path. This is the goal figure.
//                                - pipelined: encoding on a second thread overlapping the commits, as the engine runs.
//                                - serial: encode then commit on one thread, each commit waiting for its encoding.
//   wal_bench group DIR [N...]   commit latency and throughput with N concurrent committers (default 1, 4, 16; group
//                                commit), 4 KiB batches.
//   wal_bench dsync DIR          4 KiB writes per second to a file opened O_DSYNC: the disk's limit for one durable
//                                small write at a time (what one client waiting for each ack can get at best).
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
#include "engine/bounded_queue.h"
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

template <class R>
auto check(R&& result) {
  if (!result) throw std::runtime_error(result.error().message);
  return std::move(*result);
}

// A fresh file taking write + fdatasync of the same bytes per batch: the physical limit.
class RawFile {
 public:
  explicit RawFile(fs::path path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("open " + path_.string());
  }
  ~RawFile() {
    ::close(fd_);
    fs::remove(path_);
  }
  void commit(const std::string& data) {
    if (::write(fd_, data.data(), data.size()) != static_cast<ssize_t>(data.size())) throw std::runtime_error("write");
    if (::fdatasync(fd_) != 0) throw std::runtime_error("fdatasync");
  }

 private:
  fs::path path_;
  int fd_;
};

struct AppendFigures {
  double raw = 0, encoded = 0, serial = 0;  // seconds, summed over every batch
};

// Interleaved batch by batch, so the three see the same disk: the disk is shared and its fdatasync time drifts by
// a factor of 3 from one second to the next. Each adds its own time: raw write+fdatasync, WAL commit of an already
// encoded batch, WAL encode+commit.
AppendFigures interleaved(const fs::path& dir, const Batch& batch, const EncodedBatch& encoded, size_t batches) {
  fs::remove_all(dir / "wal-encoded");
  fs::remove_all(dir / "wal-serial");
  RawFile raw(dir / "raw.bin");
  auto wal_encoded = open_wal(dir / "wal-encoded");
  auto wal_serial = open_wal(dir / "wal-serial");
  AppendFigures t;
  for (size_t i = 0; i < batches; ++i) {
    auto start = Clock::now();
    raw.commit(encoded.columns);
    t.raw += since(start);
    start = Clock::now();
    check(wal_encoded->commit(encoded, Position{std::to_string(i)}));
    t.encoded += since(start);
    start = Clock::now();
    check(wal_serial->commit(batch, Position{std::to_string(i)}));
    t.serial += since(start);
  }
  wal_encoded.reset();
  wal_serial.reset();
  fs::remove_all(dir / "wal-encoded");
  fs::remove_all(dir / "wal-serial");
  return t;
}

// Seconds for the engine's shape: a second thread encodes batch N+1 while the WAL commits batch N. Its disk time
// cannot be interleaved with a raw run, so it is compared with a raw run of its own right before it.
std::pair<double, double> pipelined(const fs::path& dir, const Batch& batch, const EncodedBatch& encoded,
                                    size_t batches) {
  double raw_seconds = 0;
  {
    RawFile raw(dir / "raw.bin");
    const auto start = Clock::now();
    for (size_t i = 0; i < batches; ++i) raw.commit(encoded.columns);
    raw_seconds = since(start);
  }
  fs::remove_all(dir / "wal-pipelined");
  auto wal = open_wal(dir / "wal-pipelined");
  BoundedQueue<EncodedBatch> queue(1);
  const auto start = Clock::now();
  std::thread encoder([&] {
    for (size_t i = 0; i < batches; ++i) queue.push(check(wal->encode(batch)));
    queue.close();
  });
  for (size_t i = 0; auto next = queue.pop(); ++i) check(wal->commit(*next, Position{std::to_string(i)}));
  encoder.join();
  const double wal_seconds = since(start);
  wal.reset();
  fs::remove_all(dir / "wal-pipelined");
  return {raw_seconds, wal_seconds};
}

void append_bench(const fs::path& dir, size_t total_mib) {
  for (size_t mib : {1, 8}) {
    const size_t bytes = mib << 20;
    const size_t batches = std::max<size_t>(4, (total_mib << 20) / bytes);
    const Batch batch = random_batch(bytes, bytes);
    fs::remove_all(dir / "probe");
    const EncodedBatch encoded = check(open_wal(dir / "probe")->encode(batch));
    fs::remove_all(dir / "probe");
    AppendFigures sum;
    double pipe_raw = 0, pipe_wal = 0;
    constexpr int kRounds = 3;
    for (int round = 0; round < kRounds; ++round) {
      const AppendFigures t = interleaved(dir, batch, encoded, batches);
      sum.raw += t.raw;
      sum.encoded += t.encoded;
      sum.serial += t.serial;
      const auto [raw, wal] = pipelined(dir, batch, encoded, batches);
      pipe_raw += raw;
      pipe_wal += wal;
    }
    // Every mode makes the same encoded bytes durable; the rate counts those bytes.
    const double total = static_cast<double>(encoded.columns.size() * batches * kRounds) / (1 << 20);
    fmt::print(
        "wal append {} MiB batches x{} x{} rounds (random bytes; {} encoded bytes a batch):\n"
        "  raw write+fdatasync (interleaved)  {:5.0f} MiB/s\n"
        "  WAL commit of encoded batches      {:5.0f} MiB/s  ratio {:5.1f} %  <- goal figure (>= 85 %): what the WAL\n"
        "                                                           costs over the disk (the engine encodes off the\n"
        "                                                           commit path, in the reader stage)\n"
        "  WAL encode+commit, one thread      {:5.0f} MiB/s  ratio {:5.1f} %\n"
        "  WAL pipelined encode || commit     {:5.0f} MiB/s  ratio {:5.1f} %  (vs its own raw run, {:.0f} MiB/s)\n",
        mib, batches, kRounds, encoded.columns.size(), total / sum.raw, total / sum.encoded,
        100 * sum.raw / sum.encoded, total / sum.serial, 100 * sum.raw / sum.serial, total / pipe_wal,
        100 * pipe_raw / pipe_wal, total / pipe_raw);
  }
}

void group_bench(const fs::path& dir, const std::vector<int>& committer_counts) {
  const Batch batch = random_batch(4096, 1);
  for (int committers : committer_counts) {
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

// Rewrites the same 4 KiB at the start of a preallocated 64 MiB file, sequentially further on, so only the write and
// its flush are timed (no file growth, no metadata).
void dsync_bench(const fs::path& dir) {
  const fs::path file = dir / "dsync.probe";
  constexpr size_t kBlock = 4096, kFileBytes = 64 << 20;
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::posix_fallocate(fd, 0, kFileBytes) != 0 || ::fsync(fd) != 0) {
    throw std::runtime_error("cannot prepare " + file.string());
  }
  ::close(fd);
  fd = ::open(file.c_str(), O_WRONLY | O_DSYNC | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + file.string() + " O_DSYNC");
  std::vector<char> block(kBlock, 'x');
  const auto start = Clock::now();
  size_t writes = 0;
  while (since(start) < 3.0) {
    const off_t offset = static_cast<off_t>((writes * kBlock) % kFileBytes);
    if (::pwrite(fd, block.data(), kBlock, offset) != static_cast<ssize_t>(kBlock)) {
      throw std::runtime_error("write failed");
    }
    ++writes;
  }
  const double seconds = since(start);
  ::close(fd);
  fs::remove(file);
  fmt::print("o_dsync 4 KiB writes: {:.0f} writes/s, {:.3f} ms each ({} writes)\n", writes / seconds,
             seconds * 1e3 / writes, writes);
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
    fmt::print(stderr, "usage: wal_bench append|group|dsync|recover DIR [size | committers...]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const fs::path dir = argv[2];
  fs::create_directories(dir);
  try {
    if (mode == "append")
      append_bench(dir, argc > 3 ? std::stoul(argv[3]) : 256);
    else if (mode == "group") {
      std::vector<int> counts;
      for (int i = 3; i < argc; ++i) counts.push_back(std::stoi(argv[i]));
      group_bench(dir, counts.empty() ? std::vector<int>{1, 4, 16} : counts);
    } else if (mode == "dsync")
      dsync_bench(dir);
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
