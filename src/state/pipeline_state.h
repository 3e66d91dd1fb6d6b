// The small durable state of one pipeline besides its WAL: the epoch (bumped by RESET so new BatchIds are never
// mistaken for replays), the enable flag, the single-process lock and cumulative statistics.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/batch.h"
#include "core/result.h"
#include "state/delivery_counts.h"

namespace skippr {

// Where a pipeline keeps its files: DATA_DIR/pipelines/<name>/...
struct PipelinePaths {
  std::filesystem::path root;
  std::filesystem::path wal;          // wal/<first-seq>.wal
  std::filesystem::path state;        // state.json: epoch, enabled
  std::filesystem::path lock;         // held with flock() by the running process; names its holder
  std::filesystem::path stats;        // stats.json: cumulative counters
  std::filesystem::path chaos_log;    // one line per chaos kill, so tests can count them
  std::filesystem::path dead_letter;  // deadletter.jsonl: records that could not be read, with the reason

  static PipelinePaths of(const std::filesystem::path& data_dir, const std::string& pipeline);
};

struct PipelineState {
  uint64_t epoch = 1;
  bool enabled = true;
  // Random, 32 hex digits, made with the state (first start in this DATA_DIR, each RESET): part of every BatchId.
  // Empty in a state.json written before lineages existed (the sync then makes one and saves it).
  std::string lineage;
  // Where the source starts while the WAL is empty: the position the destination's ledger held when this state was
  // made in a new DATA_DIR (see docs/design/commit-protocol.md, "A lost DATA_DIR"), with the batch it came from.
  // Empty: from the start.
  Position resume_position;
  std::string resumed_after;  // that batch's id, for SHOW PIPELINE
  // WAL_STORAGE=clustered: raised by each `skipprd promote`. A replica refuses a primary of a lower term, so a
  // primary that was replaced commits nothing more. On a replica, the highest term it has accepted.
  uint64_t term = 0;
  // RESYNC STREAM: per stream, how many re-syncs were asked for. The source compares it with what its position says
  // it answered, so a request survives kills until a committed position shows the re-sync under way.
  std::map<std::string, uint64_t> resync_requests;
};

// PipelineState::resync_requests as the JSON text both state stores keep; nullopt for text it did not write.
std::string resync_requests_to_json(const std::map<std::string, uint64_t>& requests);
std::optional<std::map<std::string, uint64_t>> resync_requests_from_json(const std::string& text);

// A new random lineage: 128 bits from the system's random device, as 32 lowercase hex digits.
std::string new_lineage();

class Env;

// Absent file = a pipeline never run: epoch 1, enabled. An unreadable file is kCorruption naming it.
// `env`: the I/O seam (tests cut the power through it); nullptr = default_env().
Result<PipelineState> load_state(const PipelinePaths& paths, Env* env = nullptr);
// Written whole to a temporary file, fsynced and renamed over the old one.
Status save_state(const PipelinePaths& paths, const PipelineState& state, Env* env = nullptr);

// Cumulative counters shown by SHOW STATS. A run saves them every few seconds and at its end, so a killed run loses at
// most its last few seconds of counts (the data itself is protected by the WAL, not by this file).
struct PipelineStats : DeliveryCounts {
  uint64_t runs = 0;
  std::string last_run_started;
  std::string last_run_finished;
  int last_exit_code = -1;
  double last_rows_per_second = 0;
};
PipelineStats load_stats(const PipelinePaths& paths);  // absent or unreadable = zeros
Status save_stats(const PipelinePaths& paths, const PipelineStats& stats);
// The stats as a JSON document (what stats.json holds, and the DynamoDB store's stats item); unreadable = zeros.
std::string stats_to_json(const PipelineStats& stats);
PipelineStats stats_from_json(std::string_view text);

// "pid N on host H since T": who holds a pipeline, as a second copy is told.
std::string lease_holder_description();

// One process per pipeline: an exclusive flock() on the lock file, released by the kernel when the process dies
// (kill -9 included), so there is no stale lock to clean up.
class PipelineLock {
 public:
  // kLocked with "pipeline X is already running: pid N on host H since T" when another process holds it.
  static Result<PipelineLock> acquire(const PipelinePaths& paths, const std::string& pipeline);
  // Who holds it, without taking it; nullopt when nobody does.
  static std::optional<std::string> holder(const PipelinePaths& paths);

  PipelineLock(PipelineLock&& other) noexcept;
  PipelineLock& operator=(PipelineLock&&) = delete;
  ~PipelineLock();

 private:
  explicit PipelineLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace skippr
