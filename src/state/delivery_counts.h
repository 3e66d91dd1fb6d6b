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
  // Of rows_landed, rows_rejected and dead_letters, per named stream (a source of several streams); empty for a
  // one-stream pipeline, and a stream is there only once it has some.
  std::map<std::string, uint64_t> stream_rows_landed;
  std::map<std::string, uint64_t> stream_rows_rejected;
  std::map<std::string, uint64_t> stream_dead_letters;

  using Member = uint64_t DeliveryCounts::*;
  using StreamMember = std::map<std::string, uint64_t> DeliveryCounts::*;
  // Every counter with its name, in display order.
  static std::span<const std::pair<const char*, Member>> fields();
  // The counters kept per stream, named as the pipeline's own ("rows_landed"): SHOW STATS shows rows_landed[<stream>].
  static std::span<const std::pair<const char*, StreamMember>> stream_fields();

  DeliveryCounts& operator+=(const DeliveryCounts& other) {
    for (const auto& [name, member] : fields()) this->*member += other.*member;
    for (const auto& [name, member] : stream_fields()) {
      for (const auto& [stream, count] : other.*member) (this->*member)[stream] += count;
    }
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

inline std::span<const std::pair<const char*, DeliveryCounts::StreamMember>> DeliveryCounts::stream_fields() {
  static constexpr std::pair<const char*, StreamMember> kFields[] = {
      {"rows_landed", &DeliveryCounts::stream_rows_landed},
      {"rows_rejected", &DeliveryCounts::stream_rows_rejected},
      {"dead_letters", &DeliveryCounts::stream_dead_letters},
  };
  return kFields;
}

}  // namespace skippr
