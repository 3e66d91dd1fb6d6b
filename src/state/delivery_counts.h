// The delivery counters a run keeps and SHOW STATS adds up over runs. One list of them serves the run's totals, the
// stats file and SHOW STATS, so a new counter is added in one place.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>

namespace skippr {

struct DeliveryCounts {
  uint64_t rows_read = 0;
  uint64_t rows_committed = 0;
  uint64_t rows_landed = 0;
  uint64_t batches_committed = 0;
  uint64_t batches_landed = 0;
  uint64_t batches_replayed = 0;  // landed from the WAL after a restart
  uint64_t already_applied = 0;   // retries the sink recognised as done
  uint64_t dead_letters = 0;      // records written to the dead-letter file (committed with their batch)
  uint64_t rows_rejected = 0;  // landed in the destination's rejects table, not the target (rows_landed excludes them)
  // Of rows_landed, per named stream (a source of several streams); empty for a one-stream pipeline.
  std::map<std::string, uint64_t> stream_rows_landed;

  using Member = uint64_t DeliveryCounts::*;
  // Every counter with its name, in display order.
  static std::span<const std::pair<const char*, Member>> fields();

  DeliveryCounts& operator+=(const DeliveryCounts& other) {
    for (const auto& [name, member] : fields()) this->*member += other.*member;
    for (const auto& [stream, rows] : other.stream_rows_landed) stream_rows_landed[stream] += rows;
    return *this;
  }
};

inline std::span<const std::pair<const char*, DeliveryCounts::Member>> DeliveryCounts::fields() {
  static constexpr std::pair<const char*, Member> kFields[] = {
      {"rows_read", &DeliveryCounts::rows_read},
      {"rows_committed", &DeliveryCounts::rows_committed},
      {"rows_landed", &DeliveryCounts::rows_landed},
      {"batches_committed", &DeliveryCounts::batches_committed},
      {"batches_landed", &DeliveryCounts::batches_landed},
      {"batches_replayed", &DeliveryCounts::batches_replayed},
      {"already_applied", &DeliveryCounts::already_applied},
      {"dead_letters", &DeliveryCounts::dead_letters},
      {"rows_rejected", &DeliveryCounts::rows_rejected},
  };
  return kFields;
}

}  // namespace skippr
