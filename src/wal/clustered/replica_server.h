// `skipprd replica`: the peer of WAL_STORAGE=clustered. It keeps, for every pipeline a primary sends it, a copy of
// that pipeline's WAL in its own DATA_DIR, in the disk WAL's own segment format (DATA_DIR/pipelines/<name>/wal),
// with a state.json that names the lineage, epoch and term, so `skipprd promote` can turn the copy into the
// pipeline's WAL on this machine. A batch is acknowledged only once its record is fdatasynced here.
//
// One primary per pipeline at a time; a frame is applied only when it names the session's pipeline, lineage, epoch
// and term, and a BATCH only when it is the next seq: a misdirected, replayed or out-of-order frame is refused. A
// primary whose term is below the highest this copy has seen is refused (it was replaced by a promotion).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "state/pipeline_state.h"
#include "wal/clustered/cluster_channel.h"

namespace skippr {

struct ReplicaOptions {
  std::filesystem::path data_dir;
  cluster::PeerAddress listen;
  cluster::TlsFiles tls;
  // A primary silent this long is taken for gone and its session ends (a primary cut off without its connection
  // closing would otherwise hold the copy, and `promote` waits for it). A live primary that was only idle reconnects
  // at its next commit and is caught up as usual.
  double idle_timeout_seconds = 60;
};

class ReplicaServer {
 public:
  // Binds and starts serving on its own threads; kConfig when the address or the TLS files cannot be used.
  static Result<std::unique_ptr<ReplicaServer>> start(const ReplicaOptions& options);
  ~ReplicaServer();  // stops: ends every session and joins the threads
  int port() const;

 private:
  struct Impl;
  explicit ReplicaServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `skipprd promote --pipeline NAME` on a replica's machine: the copy in `data_dir` becomes the pipeline's WAL here,
// at a term above every term it has seen, so its replica refuses the old primary from now on. kLocked while a
// primary still sends to the copy; kConfig when there is no copy here; kCorruption when the copy is incomplete (a
// catch-up into it was cut short): nothing is changed then.
struct Promotion {
  uint64_t term = 0;
  uint64_t last_seq = 0;
  uint64_t landed_seq = 0;
  std::string lineage;
};
Result<Promotion> promote_copy(const std::filesystem::path& data_dir, const std::string& pipeline);

// The automatic takeover (SKIPPR_STATE_STORE=dynamodb), by a sync that holds the pipeline's lease and this machine's
// lock on its folder: a copy found here is promoted at `term`, the lease's token (which grows with every
// acquisition, so it is above every term the copy has seen). nullopt when the folder holds no copy (this machine's
// own WAL, or nothing); its term is raised to `term` all the same, so this machine's replica refuses every older
// primary. kUnavailable for an incomplete copy (the machine that holds the whole WAL must run the pipeline), kFenced
// when the folder saw a term at or above `term`.
Result<std::optional<Promotion>> take_over_copy(const PipelinePaths& paths, const std::string& pipeline, uint64_t term);

}  // namespace skippr
