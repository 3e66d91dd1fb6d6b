// WAL commit latency in whatever storage the environment names: `wal_commit_bench KIB COUNT` commits COUNT batches
// of KIB KiB of random bytes, one after another as the engine's committer does, through the WAL that WAL_STORAGE
// (disk, s3 with SKIPPR_STATE_STORE=dynamodb, clustered with SKIPPR_PEERS) opens for a pipeline, and prints p50 /
// p99 commit latency and batches per second. bench/s3_wal.sh runs it against moto_server beside `aws s3api
// put-object`; bench/clustered_wal.sh runs it clustered beside disk.
#include <fmt/format.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/batch.h"
#include "engine/pipeline_storage.h"
#include "state/state_store.h"

using namespace skippr;
using Clock = std::chrono::steady_clock;

namespace {

Batch random_batch(size_t bytes, uint64_t seed) {
  Batch b;
  b.add_column({"blob", Type::kBinary});
  std::mt19937_64 rng(seed);
  std::string v(bytes, '\0');
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t r = rng();
    std::memcpy(v.data() + i, &r, 8);
  }
  b.columns[0].append_string(v);
  b.rows = 1;
  return b;
}

int run(size_t kib, int count) {
  auto settings = settings_from_env();
  if (!settings) throw std::runtime_error(settings.error().message);
  auto storage = PipelineStorage::open(*settings, fmt::format("bench-{}k", kib));
  if (!storage) throw std::runtime_error(storage.error().message);
  auto lease = (*storage)->state().acquire();
  if (!lease) throw std::runtime_error(lease.error().message);
  PipelineState state = (*storage)->state().load().value();
  state.lineage = new_lineage();
  if (auto saved = (*storage)->state().save(state); !saved) throw std::runtime_error(saved.error().message);
  auto wal = (*storage)->open_wal(state, **lease);
  if (!wal) throw std::runtime_error(wal.error().message);
  const Batch batch = random_batch(kib << 10, kib);
  auto encoded = (*wal)->encode(batch).value();
  std::vector<double> ms;
  const auto started = Clock::now();
  for (int i = 0; i < count; ++i) {
    const auto t = Clock::now();
    auto id = (*wal)->commit(encoded, Position{fmt::format(R"({{"n":{}}})", i)});
    if (!id) throw std::runtime_error(id.error().message);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::sort(ms.begin(), ms.end());
  const std::string kind = settings->wal_storage;
  const std::string what = kind == "s3"          ? "PUT If-None-Match + conditional UpdateItem"
                           : kind == "clustered" ? "local fdatasync and the peer's ack, at once"
                                                 : "append + fdatasync";
  fmt::print("{} wal commit {} KiB: p50 {:.2f} ms, p99 {:.2f} ms, {:.1f} batches/s ({} commits: {})\n", kind, kib,
             ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], count / seconds, count, what);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);  // as skipprd: a clustered WAL's peer that goes away is an error, not a kill
  if (argc != 3) {
    fmt::print(stderr, "usage: wal_commit_bench KIB COUNT (WAL_STORAGE and its variables say where)\n");
    return 2;
  }
  try {
    return run(std::stoul(argv[1]), std::stoi(argv[2]));
  } catch (const std::exception& e) {
    fmt::print(stderr, "wal_commit_bench: {}\n", e.what());
    return 1;
  }
}
