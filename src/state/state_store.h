// The seam between a pipeline and where its small state lives (SKIPPR_STATE_STORE): `local` (files in DATA_DIR,
// state/pipeline_state.h) or `dynamodb` (one item per pipeline, conditional writes; state/dynamodb_state_store.h).
// It holds the epoch, lineage, enabled flag and resume position, the statistics, and the lease that lets one process
// at a time run the pipeline. RESET, ENABLE/DISABLE, SHOW and sync all go through it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "state/pipeline_state.h"

namespace skippr {

class Env;
class WalCommitLog;

// Held by the one process that runs a pipeline.
class PipelineLease {
 public:
  virtual ~PipelineLease() = default;
  // Grows with every acquisition; conditional writes carry it, so a process that lost the lease changes nothing.
  virtual uint64_t token() const = 0;
  // ok while this process still holds it. kFenced once another took it over; kUnavailable when it could not be
  // renewed before it ran out. Cheap: it asks the store only when the last renewal is about to run out.
  virtual Status check() = 0;
  // `callback` runs once (on the renewal thread) when the lease is found lost, so the run can stop at once.
  virtual void on_lost(std::function<void(const Error&)> callback) { (void)callback; }
};

class StateStore {
 public:
  virtual ~StateStore() = default;
  // For messages: "DATA_DIR/pipelines/<name>" or "DynamoDB table <t>".
  virtual std::string where() const = 0;
  // Whether the store holds anything for the pipeline (it ran, or was enabled/disabled).
  virtual Result<bool> known() = 0;
  // An absent state is that of a pipeline never run: epoch 1, enabled, no lineage.
  virtual Result<PipelineState> load() = 0;
  // Replaces epoch, enabled, lineage and resume position. A save that changes the epoch (RESET) also clears what a
  // WAL kept in the store for the old epoch. While a lease is held, conditional on it.
  virtual Status save(const PipelineState& state) = 0;
  virtual Status set_enabled(bool enabled) = 0;
  // kLocked naming the holder when another process holds the pipeline.
  virtual Result<std::unique_ptr<PipelineLease>> acquire() = 0;
  // Who holds it, without taking it; nullopt when nobody does.
  virtual std::optional<std::string> holder() = 0;
  virtual PipelineStats load_stats() = 0;  // absent or unreadable = zeros
  virtual Status save_stats(const PipelineStats& stats) = 0;
  // The record of commits a WAL in an object store needs (WAL_STORAGE=s3); nullptr when this store cannot keep it.
  virtual WalCommitLog* wal_commit_log() { return nullptr; }
};

// Files under DATA_DIR/pipelines/<name>; the lease is an flock() the kernel releases when the process dies.
std::unique_ptr<StateStore> local_state_store(const PipelinePaths& paths, std::string pipeline, Env* env = nullptr);

}  // namespace skippr
