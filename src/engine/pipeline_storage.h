// Where one pipeline keeps its WAL and its state, as the environment chose: DATA_DIR (WAL_STORAGE=disk,
// SKIPPR_STATE_STORE=local) or S3 + DynamoDB (WAL_STORAGE=s3, SKIPPR_STATE_STORE=dynamodb). Sync, RESET, SHOW,
// ENABLE/DISABLE and `wal inspect` reach both through this, so none of them knows which it is.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "state/state_store.h"
#include "wal/wal.h"

namespace skippr {

class PipelineStorage {
 public:
  // Resolves the AWS services (credentials, endpoints) and checks the state table; nothing is written.
  // `wal_env`: the disk WAL's I/O seam (tests inject faults through it); nullptr = default_env().
  static Result<std::unique_ptr<PipelineStorage>> open(const Settings& settings, const std::string& pipeline,
                                                       Env* wal_env = nullptr);
  ~PipelineStorage();

  StateStore& state() { return *state_; }
  const PipelinePaths& paths() const { return paths_; }  // DATA_DIR's part (dead letters, caches, chaos log)
  bool wal_in_object_store() const { return settings_.wal_storage == "s3"; }
  bool clustered() const { return cluster_ != nullptr; }
  // WAL_STORAGE=clustered, for a pipeline that has no state here: refuses to start afresh while the peer keeps a
  // copy of it holding batches not landed yet (this machine lost its DATA_DIR; the copy must be promoted instead);
  // otherwise `state` takes the highest term the peer has accepted, so the new start is not taken for a replaced
  // primary. Nothing to do in the other storage modes.
  Status fresh_start_with_peer(PipelineState& state) const;
  std::string wal_location() const;

  // The WAL of `state` for a writer holding `lease`.
  Result<std::unique_ptr<Wal>> open_wal(const PipelineState& state, const PipelineLease& lease) const;
  // What the WAL holds, changing nothing; an empty inspection when there is none.
  Result<WalInspection> inspect_wal(const PipelineState& state) const;
  // The epoch of the oldest batch stored (nullopt: the WAL holds nothing), to finish an interrupted RESET.
  Result<std::optional<uint64_t>> wal_epoch() const;
  // RESET: the state moves to a new epoch and lineage first, then the WAL is deleted (see engine/reset.h).
  Result<uint64_t> reset();
  // Deletes a WAL of an epoch before `epoch` (a RESET that was interrupted); kCorruption for a newer one.
  Status finish_interrupted_reset(uint64_t epoch, std::optional<uint64_t> epoch_on_disk) const;

 private:
  PipelineStorage(const Settings& settings, std::string pipeline, Env* wal_env);
  WalOptions disk_wal_options(const PipelineState& state) const;  // the disk WAL, alone or the primary's copy
  struct Remote;
  struct Cluster;

  const Settings& settings_;
  std::string pipeline_;
  Env* wal_env_;
  PipelinePaths paths_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<Remote> remote_;    // set for WAL_STORAGE=s3
  std::unique_ptr<Cluster> cluster_;  // set for WAL_STORAGE=clustered
};

}  // namespace skippr
