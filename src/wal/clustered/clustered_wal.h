// WAL_STORAGE=clustered: the disk WAL of this machine plus a synchronous copy on a peer (`skipprd replica`).
//
// A batch is committed only once it is fdatasynced here AND the peer acknowledged it fdatasynced there; both happen
// at once (the frame goes out before the local sync starts). A peer that is down or slow blocks the commit, never a
// silent single copy: past the ack timeout the commit fails kUnavailable (exit 75) and the batch, durable here, is
// committed by the next run once the peer holds it. Every (re)connection starts with a handshake in which the
// replica says what its copy holds; the primary then appends what is missing or, when the copy does not continue
// this WAL exactly (another lineage or epoch, another term's writer, a tail this WAL never committed), starts it
// again from the oldest batch not landed. LANDED marks go to the peer too, so it frees what has landed.
//
// Terms fence a primary that was replaced: `skipprd promote` on the replica's machine raises the pipeline's term,
// and a replica refuses every frame of a lower term, so the old primary can commit nothing more; restarted, it is
// refused before its WAL opens and lands nothing. One still running when it is replaced may still land batches it
// had committed: those are in the copy under the same batch ids, so an exactly-once destination takes each once.
// See wal/clustered/replica_server.h for the replica's side.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "wal/clustered/cluster_channel.h"
#include "wal/wal.h"

namespace skippr {

struct ClusterOptions {
  cluster::PeerAddress peer;
  std::shared_ptr<cluster::TlsContext> tls;
  double ack_timeout_seconds = 30;  // SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS
  uint64_t term = 0;                // the pipeline's term in its state (raised by each promotion)
};

// Wraps `local` (a disk WAL opened with `options`) and returns once the peer holds a copy of everything committed
// in it: kUnavailable when the peer cannot be reached within the ack timeout, kFenced when the peer knows a newer
// term, kConfig when TLS refuses the peer.
Result<std::unique_ptr<Wal>> open_clustered_wal(std::unique_ptr<Wal> local, const WalOptions& options,
                                                const ClusterOptions& cluster);

// What a peer's copy of a pipeline holds, asked without changing it (a sync that finds no state here asks first).
struct PeerCopy {
  bool exists = false;
  bool complete = false;  // false while a catch-up into it is unfinished (it cannot be promoted then)
  std::string lineage;
  uint64_t epoch = 0;
  uint64_t last_seq = 0;
  uint64_t landed_seq = 0;
  uint64_t fence_term = 0;  // the highest term the peer has accepted for the pipeline: a new primary starts there
};
Result<PeerCopy> probe_peer_copy(const ClusterOptions& cluster, const std::string& pipeline);

}  // namespace skippr
