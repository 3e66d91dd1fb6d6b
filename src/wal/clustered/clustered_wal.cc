#include "wal/clustered/clustered_wal.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace skippr {

namespace {

using cluster::Channel;
using cluster::Frame;
using cluster::FrameMeta;
using cluster::FrameType;
using Clock = std::chrono::steady_clock;

// What is left until `deadline`, never less than a moment (a socket call with no time at all would fail at once).
double seconds_left(Clock::time_point deadline) {
  return std::max(0.05, std::chrono::duration<double>(deadline - Clock::now()).count());
}

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

// What the replica said about its copy in answer to HELLO.
struct CopyState {
  bool exists = false;
  std::string lineage;
  uint64_t epoch = 0;
  uint64_t term = 0;  // the term of the primary that last wrote or checked the copy
  uint64_t last_seq = 0;
  uint32_t last_crc = 0;
  uint64_t landed_seq = 0;
};

// A REFUSED frame as the error the caller stops with.
Error refusal_error(const nlohmann::json& meta, const std::string& peer) {
  const std::string reason = meta.value("reason", std::string("no reason given"));
  const std::string kind = meta.value("kind", std::string());
  if (kind == "fenced" || kind == "config") {
    return Error{kind == "fenced" ? ErrorKind::kFenced : ErrorKind::kConfig,
                 fmt::format("the peer {} refused this primary: {}", peer, reason)};
  }
  if (kind == "busy" || kind == "unavailable") {
    return Error{ErrorKind::kUnavailable, fmt::format("the peer {} cannot keep the copy now: {}", peer, reason)};
  }
  return Error{ErrorKind::kCorruption, fmt::format("the peer {} refused a frame: {}", peer, reason)};
}

// Sends HELLO (`meta`) and reads the replica's COPY_STATE into `object`: the copy's identity, or the refusal as the
// error to stop with. Shared by the handshake and the probe.
Result<FrameMeta> exchange_hello(Channel& channel, const std::string& meta, const ClusterOptions& cluster,
                                 Clock::time_point deadline, nlohmann::json& object) {
  SKIPPR_TRY(channel.send(FrameType::kHello, meta, {}, seconds_left(deadline)));
  auto answer = channel.receive(seconds_left(deadline));
  if (!answer && answer.error().kind == ErrorKind::kCorruption && cluster.tls->plaintext()) {
    return fail(ErrorKind::kConfig,
                fmt::format("the peer {} does not answer in plaintext cluster frames ({}): it is most likely a "
                            "replica with TLS, while this side has SKIPPR_CLUSTER_INSECURE=yes; both sides must agree",
                            cluster.peer.str(), answer.error().message));
  }
  if (!answer) return std::unexpected(answer.error());
  auto id = cluster::parse_meta(*answer, object);
  if (!id) return std::unexpected(id.error());
  if (answer->type == FrameType::kRefused) return std::unexpected(refusal_error(object, cluster.peer.str()));
  if (answer->type != FrameType::kCopyState) {
    return fail(ErrorKind::kCorruption, fmt::format("the peer {} answered HELLO with {}", cluster.peer.str(),
                                                    cluster::to_string(answer->type)));
  }
  return id;
}

class ClusteredWal final : public Wal {
 public:
  ClusteredWal(std::unique_ptr<Wal> local, const WalOptions& options, ClusterOptions cluster)
      : local_(std::move(local)), options_(options), cluster_(std::move(cluster)) {}

  ~ClusteredWal() override {
    std::lock_guard lock(io_mu_);
    if (channel_) (void)flush_landed_locked(std::min(cluster_.ack_timeout_seconds, 5.0));
  }

  // Connects and brings the peer's copy up to this WAL, retrying until `deadline`.
  Status catch_up_until(Clock::time_point deadline) {
    std::lock_guard lock(io_mu_);
    return reconnect_locked(deadline, local_->last_committed_seq());
  }

  using Wal::commit;
  Result<EncodedBatch> encode_parts(std::span<const Batch> parts) const override { return local_->encode_parts(parts); }

  Result<BatchId> commit(const EncodedBatch& batch, const Position& position_after) override {
    std::lock_guard lock(io_mu_);
    // One deadline for everything this commit waits on, so it never waits much longer than the ack timeout.
    const auto deadline = deadline_after(cluster_.ack_timeout_seconds);
    if (channel_) (void)flush_landed_locked(seconds_left(deadline));
    const uint64_t seq = local_->next_seq();
    bool sent = false;
    if (channel_) {
      const std::string meta = cluster::make_meta(
          identity(seq), {{"position_after", position_after.token}, {"rows", batch.rows}, {"crc", batch.columns_crc}});
      auto st = channel_->send(FrameType::kBatch, meta, batch.columns, seconds_left(deadline));
      if (st) {
        sent = true;
      } else {
        drop_locked(st.error());
      }
    }
    // The local fdatasync runs while the peer syncs its copy.
    auto id = local_->commit(batch, position_after);
    if (!id) {
      // The peer may now hold a batch this WAL does not: the next handshake finds that and starts the copy again.
      channel_.reset();
      return id;
    }
    if (sent) {
      auto acked = wait_ack_locked(seq, deadline);
      if (acked) return id;
      if (acked.error().kind == ErrorKind::kFenced || acked.error().kind == ErrorKind::kConfig) {
        return std::unexpected(acked.error());
      }
      drop_locked(acked.error());
    }
    auto st = reconnect_locked(deadline, seq);
    if (!st) return std::unexpected(st.error());
    return id;
  }

  Status mark_landed(uint64_t seq) override {
    SKIPPR_TRY(local_->mark_landed(seq));
    uint64_t known = landed_to_send_.load();
    while (seq > known && !landed_to_send_.compare_exchange_weak(known, seq)) {
    }
    return ok();  // sent with the next commit (or at sync / close): the socket belongs to the committer
  }

  void stop_waiting() override { local_->stop_waiting(); }

  Status sync() override {
    SKIPPR_TRY(local_->sync());
    std::lock_guard lock(io_mu_);
    if (channel_) (void)flush_landed_locked(cluster_.ack_timeout_seconds);
    return ok();
  }

  std::vector<WalBatchInfo> pending() const override { return local_->pending(); }
  Result<std::vector<Batch>> read_parts(const WalBatchInfo& info) const override { return local_->read_parts(info); }
  Result<EncodedBatch> read_encoded(const WalBatchInfo& info) const override { return local_->read_encoded(info); }
  Position last_position() const override { return local_->last_position(); }
  uint64_t last_committed_seq() const override { return local_->last_committed_seq(); }
  uint64_t next_seq() const override { return local_->next_seq(); }
  uint64_t landed_watermark() const override { return local_->landed_watermark(); }
  uint64_t bytes_on_disk() const override { return local_->bytes_on_disk(); }
  std::string location() const override {
    return fmt::format("{} (with a copy on {})", local_->location(), cluster_.peer.str());
  }

 private:
  FrameMeta identity(uint64_t seq) const {
    return {options_.pipeline, options_.lineage, options_.epoch, cluster_.term, seq};
  }

  void drop_locked(const Error& why) {
    if (channel_) spdlog::warn("clustered WAL: lost the peer {}: {}", cluster_.peer.str(), why.message);
    channel_.reset();
  }

  Status send_locked(FrameType type, uint64_t seq, const nlohmann::json& extra, std::string_view blob = {}) {
    return channel_->send(type, cluster::make_meta(identity(seq), extra), blob, cluster_.ack_timeout_seconds);
  }

  Status flush_landed_locked(double timeout_seconds) {
    const uint64_t landed = landed_to_send_.load();
    if (landed <= landed_sent_) return ok();
    auto st = channel_->send(FrameType::kLanded, cluster::make_meta(identity(landed), nlohmann::json::object()), {},
                             timeout_seconds);
    if (!st) {
      drop_locked(st.error());
      return st;
    }
    landed_sent_ = landed;
    return ok();
  }

  // The replica's answer to a frame that expects one: ACK for `seq` (or later), else the refusal or the failure.
  Status wait_ack_locked(uint64_t seq, Clock::time_point deadline) {
    while (true) {
      auto frame = channel_->receive(seconds_left(deadline));
      if (!frame) return std::unexpected(frame.error());
      nlohmann::json meta;
      auto id = cluster::parse_meta(*frame, meta);
      if (!id) return std::unexpected(id.error());
      if (frame->type == FrameType::kRefused) return std::unexpected(refusal_error(meta, cluster_.peer.str()));
      if (frame->type == FrameType::kAck && id->seq >= seq) return ok();
      if (frame->type != FrameType::kAck) {
        return fail(ErrorKind::kCorruption, fmt::format("the peer {} answered {} where an ACK was due",
                                                        cluster_.peer.str(), cluster::to_string(frame->type)));
      }
    }
  }

  // Connects (again) until `deadline` and brings the copy up to everything committed here, `needed` included.
  Status reconnect_locked(Clock::time_point deadline, uint64_t needed) {
    std::string last_problem = "no answer";
    while (true) {
      auto st = handshake_locked(deadline);
      if (st) return ok();
      channel_.reset();
      const ErrorKind kind = st.error().kind;
      if (kind == ErrorKind::kFenced || kind == ErrorKind::kConfig || kind == ErrorKind::kCorruption ||
          kind == ErrorKind::kFatalIo) {
        return st;
      }
      last_problem = st.error().message;
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(
          500, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count())));
      if (Clock::now() >= deadline) break;
    }
    return fail(
        ErrorKind::kUnavailable,
        fmt::format("WAL_STORAGE=clustered: the peer {} has not confirmed a copy of batch {} of pipeline '{}' "
                    "within SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS={} ({}); a batch counts as committed only once "
                    "both machines hold it, so it stays in this machine's WAL and is confirmed by the next run: "
                    "start or reach the peer (skipprd replica), then run again",
                    cluster_.peer.str(), needed, options_.pipeline, cluster_.ack_timeout_seconds, last_problem));
  }

  // A catch-up that makes progress is not cut off: each batch the peer acknowledges gives it the ack timeout again,
  // so a long backlog (a new replica after a failover) is copied whole instead of started over run after run.
  Status handshake_locked(Clock::time_point deadline) {
    auto channel = Channel::connect(cluster_.peer, cluster_.tls, seconds_left(deadline));
    if (!channel) return std::unexpected(channel.error());
    channel_ = std::move(*channel);
    // One view of what waits to land: the land thread moves the watermark meanwhile, and the copy must start at the
    // first batch this view still holds.
    const std::vector<WalBatchInfo> pending = local_->pending();
    const uint64_t last = local_->last_committed_seq();
    const uint64_t watermark = pending.empty() ? last : pending.front().seq - 1;
    nlohmann::json meta;
    auto id = exchange_hello(*channel_, cluster::make_meta(identity(last), {{"landed", watermark}}), cluster_, deadline,
                             meta);
    if (!id) return std::unexpected(id.error());
    CopyState copy;
    copy.exists = meta.value("exists", false);
    copy.lineage = id->lineage;
    copy.epoch = id->epoch;
    copy.term = id->term;
    copy.last_seq = id->seq;
    copy.last_crc = meta.value("last_crc", uint32_t{0});
    copy.landed_seq = meta.value("landed", uint64_t{0});

    uint64_t from = last + 1;  // the first batch the copy lacks
    if (continues_this_wal(copy, pending, watermark, last)) {
      from = copy.last_seq + 1;
    } else {
      if (copy.exists) {
        spdlog::info(
            "clustered WAL: the copy on {} (lineage {}, epoch {}, term {}, up to seq {}) does not continue "
            "this WAL; it is started again from seq {}",
            cluster_.peer.str(), copy.lineage, copy.epoch, copy.term, copy.last_seq, watermark + 1);
      }
      // Where the source stands before the first batch sent: known here only when no batch waits (then it is the
      // resume point); otherwise the batches sent carry it, and the copy is incomplete until they all arrived.
      const std::string position = pending.empty() ? local_->last_position().token : std::string();
      SKIPPR_TRY(send_locked(FrameType::kResetCopy, watermark + 1, {{"position", position}}));
      from = watermark + 1;
    }
    for (const WalBatchInfo& info : pending) {
      if (info.seq < from) continue;
      auto encoded = local_->read_encoded(info);
      if (!encoded) return std::unexpected(encoded.error());
      SKIPPR_TRY(send_locked(
          FrameType::kBatch, info.seq,
          {{"position_after", info.position_after.token}, {"rows", encoded->rows}, {"crc", encoded->columns_crc}},
          encoded->columns));
      SKIPPR_TRY(wait_ack_locked(info.seq, deadline));
      deadline = std::max(deadline, deadline_after(cluster_.ack_timeout_seconds));
    }
    SKIPPR_TRY(send_locked(FrameType::kCaughtUp, last, {{"landed", watermark}}));
    SKIPPR_TRY(wait_ack_locked(last, deadline));
    landed_sent_ = watermark;
    return ok();
  }

  // Whether the copy is a prefix of this WAL that the missing batches can simply follow: same lineage, epoch and
  // writer term, not ahead, and its newest batch is this WAL's batch of that seq (or has landed). A copy cut short
  // while it was caught up is such a prefix too: it goes on where it stopped (CAUGHT_UP marks it complete).
  bool continues_this_wal(const CopyState& copy, const std::vector<WalBatchInfo>& pending, uint64_t watermark,
                          uint64_t last) const {
    // A copy of an older term continues this WAL too when it ends on one of its batches: every primary handshakes
    // before it commits, so two WALs of one lineage and epoch differ only by a tail one of them never committed, and
    // that tail is either past this WAL's end or fails the checksum of the copy's last batch. (Requiring the same
    // term would copy everything again at each restart, where the term is the lease's token.)
    if (!copy.exists || copy.lineage != options_.lineage || copy.epoch != options_.epoch || copy.term > cluster_.term ||
        copy.last_seq > last || copy.last_seq < watermark) {
      return false;
    }
    if (copy.last_seq == watermark) return true;  // all it holds has landed; what follows is pending here
    for (const WalBatchInfo& info : pending) {
      if (info.seq == copy.last_seq) return info.crc == copy.last_crc;
    }
    return false;
  }

  std::unique_ptr<Wal> local_;
  WalOptions options_;
  ClusterOptions cluster_;
  std::mutex io_mu_;  // the channel: only one frame exchange at a time
  std::unique_ptr<Channel> channel_;
  std::atomic<uint64_t> landed_to_send_{0};
  uint64_t landed_sent_ = 0;
};

}  // namespace

Result<std::unique_ptr<Wal>> open_clustered_wal(std::unique_ptr<Wal> local, const WalOptions& options,
                                                const ClusterOptions& cluster) {
  auto wal = std::make_unique<ClusteredWal>(std::move(local), options, cluster);
  SKIPPR_TRY(wal->catch_up_until(deadline_after(cluster.ack_timeout_seconds)));
  return std::unique_ptr<Wal>(std::move(wal));
}

Result<PeerCopy> probe_peer_copy(const ClusterOptions& cluster, const std::string& pipeline) {
  const auto deadline = deadline_after(cluster.ack_timeout_seconds);
  std::string last_problem;
  while (true) {
    auto channel = Channel::connect(cluster.peer, cluster.tls, seconds_left(deadline));
    if (channel) {
      nlohmann::json object;
      auto id = exchange_hello(**channel, cluster::make_meta({pipeline, "", 0, cluster.term, 0}, {{"probe", true}}),
                               cluster, deadline, object);
      if (id) {
        return PeerCopy{object.value("exists", false),
                        object.value("complete", false),
                        id->lineage,
                        id->epoch,
                        id->seq,
                        object.value("landed", uint64_t{0}),
                        object.value("fence_term", uint64_t{0})};
      }
      const Error& e = id.error();
      if (e.kind == ErrorKind::kConfig || e.kind == ErrorKind::kFenced || e.kind == ErrorKind::kCorruption) {
        return std::unexpected(e);
      }
      last_problem = e.message;
    } else {
      if (channel.error().kind == ErrorKind::kConfig) return std::unexpected(channel.error());
      last_problem = channel.error().message;
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return fail(ErrorKind::kUnavailable,
              fmt::format("WAL_STORAGE=clustered: the peer {} did not answer within "
                          "SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS={} ({}); a pipeline without state here starts only once "
                          "the peer says whether it keeps a copy of it",
                          cluster.peer.str(), cluster.ack_timeout_seconds, last_problem));
}

}  // namespace skippr
