// Where one pipeline keeps its WAL and its state, as the environment chose: DATA_DIR (WAL_STORAGE=disk,
// SKIPPR_STATE_STORE=local) or S3 + DynamoDB (WAL_STORAGE=s3, SKIPPR_STATE_STORE=dynamodb). Sync, RESET, SHOW,
// ENABLE/DISABLE and `wal inspect` reach both through this, so none of them knows which it is.
//
// WAL_STORAGE=clustered keeps the WAL on this machine and a synchronous copy on the peer. With local state the state
// travels with the WAL (and its copy), and a failover is `skipprd promote` on the peer's machine. With
// SKIPPR_STATE_STORE=dynamodb the state and the lease are in DynamoDB and takeover is automatic: `skipprd sync` runs
// on both machines, the one without the lease stands by, and when the lease runs out it takes the pipeline over,
// promoting its copy at the lease's token, which is the term (it only grows, so the replica of the machine that was
// replaced refuses that machine's older primary).
#pragma once

#include <functional>
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
  // The state outlives this machine but the WAL does not (clustered with DynamoDB state): no WAL here means none of
  // the state's batches is here, and a run starts afresh from the destination with a new lineage.
  bool state_outlives_wal() const { return cluster_ != nullptr && settings_.state_store != "local"; }

  // The lease of the pipeline (StateStore::acquire). Clustered with DynamoDB state, a process that finds it held
  // stands by until it runs out (or `stop_requested`), then takes this machine's WAL folder (waiting for the replica
  // here to end the session of the primary it replaces) and promotes the copy it finds there (take_over_copy).
  Result<std::unique_ptr<PipelineLease>> acquire(const std::function<bool()>& stop_requested);
  // WAL_STORAGE=clustered, for a pipeline that has no state here: refuses to start afresh while the peer keeps a
  // copy of it holding batches not landed yet (this machine lost its DATA_DIR; the copy must be promoted instead);
  // otherwise `state` takes the highest term the peer has accepted, so the new start is not taken for a replaced
  // primary. With DynamoDB state a copy of an epoch before the state's is ignored (a RESET discarded it), and the
  // refusal is kUnavailable: the peer's machine takes the pipeline over by itself. Nothing to do in the other
  // storage modes.
  Status fresh_start_with_peer(PipelineState& state) const;
  std::string wal_location() const;
  // With a state that outlives the WAL: a WAL here of the state's epoch but another lineage, all landed, is removed
  // (the other machine started afresh since, which it does only when nothing waited to land); one with batches not
  // landed is kCorruption. Nothing to do otherwise.
  Status discard_wal_of_another_lineage(const PipelineState& state) const;

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
