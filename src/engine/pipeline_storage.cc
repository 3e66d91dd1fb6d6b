#include "engine/pipeline_storage.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "clients/aws/aws_config.h"
#include "core/env.h"
#include "engine/reset.h"
#include "state/dynamodb_state_store.h"
#include "wal/clustered/clustered_wal.h"
#include "wal/clustered/replica_server.h"
#include "wal/s3_wal.h"

namespace skippr {

struct PipelineStorage::Remote {
  AwsService s3;
};

struct PipelineStorage::Cluster {
  ClusterOptions options;  // without the term: the state's, or with DynamoDB state the lease's token
  // With DynamoDB state: this machine's WAL folder, held while this process runs the pipeline, as the replica here
  // holds it while it serves a primary (with local state the state store's lock is this same lock).
  std::optional<PipelineLock> folder;
};

PipelineStorage::PipelineStorage(const Settings& settings, std::string pipeline, Env* wal_env)
    : settings_(settings),
      pipeline_(std::move(pipeline)),
      wal_env_(wal_env),
      paths_(PipelinePaths::of(settings.data_dir, pipeline_)) {}

PipelineStorage::~PipelineStorage() = default;

Result<std::unique_ptr<PipelineStorage>> PipelineStorage::open(const Settings& settings, const std::string& pipeline,
                                                               Env* wal_env) {
  std::unique_ptr<PipelineStorage> storage(new PipelineStorage(settings, pipeline, wal_env));
  if (settings.state_store == "local") {
    storage->state_ = local_state_store(storage->paths_, pipeline);  // the state files as ever: not through wal_env
  } else {
    auto dynamodb = resolve_aws_service({}, "dynamodb", "SKIPPR_STATE_STORE=dynamodb");
    if (!dynamodb) return std::unexpected(dynamodb.error());
    auto store = open_dynamodb_state_store({.service = std::move(*dynamodb),
                                            .table = settings.state_dynamodb_table,
                                            .pipeline = pipeline,
                                            .lease_seconds = settings.lease_seconds,
                                            .retry_seconds = std::max(settings.sink_retry_seconds, 10.0)});
    if (!store) return std::unexpected(store.error());
    storage->state_ = std::move(*store);
  }
  if (settings.wal_storage == "s3") {
    auto s3 = resolve_aws_service({}, "s3", "WAL_STORAGE=s3");
    if (!s3) return std::unexpected(s3.error());
    storage->remote_ = std::make_unique<Remote>(Remote{std::move(*s3)});
  }
  if (settings.wal_storage == "clustered") {
    auto peer = cluster::parse_peer_address(settings.cluster_peer, "SKIPPR_PEERS");
    if (!peer) return std::unexpected(peer.error());
    auto tls = cluster::TlsContext::make(
        {settings.cluster_tls_cert, settings.cluster_tls_key, settings.cluster_tls_ca, settings.cluster_insecure},
        /*server=*/false);
    if (!tls) return std::unexpected(tls.error());
    if ((*tls)->plaintext()) {
      spdlog::warn(
          "SKIPPR_CLUSTER_INSECURE: the WAL copy goes to {} in plaintext, without authentication; use "
          "SKIPPR_CLUSTER_TLS_CERT, _KEY and _CA anywhere but a test on one machine",
          peer->str());
    }
    storage->cluster_ = std::make_unique<Cluster>();
    storage->cluster_->options = {*peer, *tls, settings.cluster_ack_timeout_seconds, 0};
  }
  return storage;
}

namespace {

S3WalOptions s3_wal_options(const Settings& settings, const AwsService& s3, const std::string& pipeline,
                            const PipelineState& state, StateStore& store) {
  S3WalOptions o;
  o.service = s3;
  o.bucket = settings.wal_s3_bucket;
  o.prefix = settings.wal_s3_prefix;
  o.pipeline = pipeline;
  o.epoch = state.epoch;
  o.lineage = state.lineage;
  o.initial_position = state.resume_position;
  o.log = store.wal_commit_log();
  // At least ten seconds even with SINK_RETRY_SECONDS=0: a single lost answer must not end a run.
  o.retry_seconds = std::max(settings.sink_retry_seconds, 10.0);
  return o;
}

}  // namespace

std::string PipelineStorage::wal_location() const {
  if (!remote_) return paths_.wal.string();
  return S3Wal::location(s3_wal_options(settings_, remote_->s3, pipeline_, {}, *state_));
}

Result<std::unique_ptr<Wal>> PipelineStorage::open_wal(const PipelineState& state, const PipelineLease& lease) const {
  if (remote_) {
    S3WalOptions o = s3_wal_options(settings_, remote_->s3, pipeline_, state, *state_);
    o.token = lease.token();
    return S3Wal::open(o);
  }
  const WalOptions o = disk_wal_options(state);
  auto local = Wal::open(o);
  if (!local || !cluster_) return local;
  ClusterOptions cluster = cluster_->options;
  cluster.term = state_outlives_wal() ? lease.token() : state.term;
  return open_clustered_wal(std::move(*local), o, cluster);
}

namespace {

// Sleeps `seconds` in short steps; false when a stop was requested meanwhile.
bool sleep_unless_stopped(double seconds, const std::function<bool()>& stop_requested) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (stop_requested()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !stop_requested();
}

}  // namespace

Result<std::unique_ptr<PipelineLease>> PipelineStorage::acquire(const std::function<bool()>& stop_requested) {
  if (!state_outlives_wal()) return state_->acquire();
  // Often enough that a takeover follows the lease's end closely, rarely enough to cost DynamoDB nothing.
  const double poll_seconds = std::clamp(settings_.lease_seconds / 4, 0.2, 2.0);
  const auto stopped = [&](std::string_view waiting_for) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("pipeline '{}': stopped while waiting for {}", pipeline_, waiting_for));
  };
  std::unique_ptr<PipelineLease> lease;
  for (bool told = false; !lease;) {
    auto got = state_->acquire();
    if (got) {
      lease = std::move(*got);
    } else if (got.error().kind != ErrorKind::kLocked) {
      return got;
    } else {
      if (!told) {
        spdlog::info("pipeline '{}': standing by: {}; this machine takes it over when that lease runs out", pipeline_,
                     got.error().message);
        told = true;
      }
      if (!sleep_unless_stopped(poll_seconds, stop_requested)) return stopped("its lease");
    }
  }
  // A replica ends a silent session after its idle timeout (a minute by default); a folder held much longer is held
  // by something else (a stopped sync of this machine): the lease goes back, so the peer's machine can take over.
  const auto folder_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(150);
  for (bool told = false; !cluster_->folder;) {
    auto folder = PipelineLock::acquire(paths_, pipeline_);
    if (folder) {
      cluster_->folder.emplace(std::move(*folder));
      break;
    }
    if (folder.error().kind != ErrorKind::kLocked) return std::unexpected(folder.error());
    if (!told) {
      // A primary killed ends its session at once; one cut off or paused, after the replica's minute of silence.
      spdlog::info(
          "pipeline '{}': waiting for this machine's replica to end the session of the primary this one "
          "replaces ({})",
          pipeline_, folder.error().message);
      told = true;
    }
    SKIPPR_TRY(lease->check());
    if (std::chrono::steady_clock::now() > folder_deadline) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("pipeline '{}': this machine's WAL folder {} stayed held for 150 s ({}); giving the "
                              "lease back",
                              pipeline_, paths_.root.string(), folder.error().message));
    }
    if (!sleep_unless_stopped(poll_seconds, stop_requested)) return stopped("this machine's WAL folder");
  }
  auto promoted = take_over_copy(paths_, pipeline_, lease->token());
  if (!promoted) return std::unexpected(promoted.error());
  if (*promoted) {
    spdlog::warn(
        "pipeline '{}': taking it over on this machine from the copy here (batches up to seq {}, landed up to {}, "
        "lineage {}), at term {}; the machine it replaces is refused from now on",
        pipeline_, (*promoted)->last_seq, (*promoted)->landed_seq, (*promoted)->lineage, (*promoted)->term);
  }
  return lease;
}

WalOptions PipelineStorage::disk_wal_options(const PipelineState& state) const {
  WalOptions o;
  o.dir = paths_.wal;
  o.pipeline = pipeline_;
  o.epoch = state.epoch;
  o.lineage = state.lineage;
  o.initial_position = state.resume_position;
  o.bytes_per_file = settings_.wal_bytes_per_file;
  o.wait_for_landing_when_full = true;  // the land stage runs beside the committer
  o.env = wal_env_;
  return o;
}

Status PipelineStorage::fresh_start_with_peer(PipelineState& state) const {
  if (!cluster_) return ok();
  auto copy = probe_peer_copy(cluster_->options, pipeline_);
  if (!copy) return std::unexpected(copy.error());
  const bool discarded_by_reset = state_outlives_wal() && copy->epoch < state.epoch;
  if (!copy->exists || copy->last_seq <= copy->landed_seq || discarded_by_reset) {
    state.term = std::max(state.term, copy->fence_term);
    return ok();
  }
  if (state_outlives_wal()) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("pipeline '{}' has no WAL on this machine, and its peer {} keeps a copy of it with {} "
                            "committed batch(es) not landed yet (lineage {}): the pipeline runs there (its `skipprd "
                            "sync` takes it over once this process's lease is released)",
                            pipeline_, cluster_->options.peer.str(), copy->last_seq - copy->landed_seq, copy->lineage));
  }
  const std::string what_to_do =
      copy->complete ? fmt::format(
                           "Run `skipprd promote --pipeline {}` on the peer's machine and run the pipeline "
                           "there (this machine then runs `skipprd replica`), or restore DATA_DIR",
                           pipeline_)
                     : "That copy is incomplete (a catch-up into it was cut short), so it cannot be promoted: "
                       "restore this machine's DATA_DIR";
  return fail(ErrorKind::kConfig,
              fmt::format("DATA_DIR {} holds no state for pipeline '{}', but its peer {} keeps a copy of it with {} "
                          "committed batch(es) not landed yet (lineage {}): this machine lost its DATA_DIR. {}; "
                          "starting afresh here would leave those batches behind",
                          settings_.data_dir.string(), pipeline_, cluster_->options.peer.str(),
                          copy->last_seq - copy->landed_seq, copy->lineage, what_to_do));
}

Result<WalInspection> PipelineStorage::inspect_wal(const PipelineState& state) const {
  if (remote_) return S3Wal::inspect(s3_wal_options(settings_, remote_->s3, pipeline_, state, *state_));
  return Wal::inspect(paths_.wal, wal_env_);
}

Status PipelineStorage::discard_wal_of_another_lineage(const PipelineState& state) const {
  if (!state_outlives_wal() || state.lineage.empty()) return ok();
  auto wal = Wal::inspect(paths_.wal, wal_env_);
  if (!wal) return std::unexpected(wal.error());
  if (wal->segments.empty() || wal->lineage == state.lineage || wal->epoch != state.epoch) return ok();
  if (wal->last_committed_seq > wal->landed_watermark) {
    return fail(ErrorKind::kCorruption,
                fmt::format("the WAL of pipeline '{}' in {} holds {} batch(es) of lineage {} not landed, but {} names "
                            "lineage {}; nothing was changed",
                            pipeline_, paths_.wal.string(), wal->last_committed_seq - wal->landed_watermark,
                            wal->lineage, state_->where(), state.lineage));
  }
  spdlog::warn(
      "pipeline '{}': the WAL here is of lineage {}, landed to its end; the other machine has started "
      "lineage {} since: it is removed",
      pipeline_, wal->lineage, state.lineage);
  return Wal::destroy(paths_.wal, wal_env_);
}

Result<std::optional<uint64_t>> PipelineStorage::wal_epoch() const {
  if (remote_) return S3Wal::oldest_epoch(s3_wal_options(settings_, remote_->s3, pipeline_, {}, *state_));
  return Wal::epoch_on_disk(paths_.wal, wal_env_);
}

Result<uint64_t> PipelineStorage::reset() {
  auto epoch = reset_state_then_wal(*state_, [&](uint64_t new_epoch) -> Status {
    if (state_outlives_wal()) {
      // This machine's WAL or copy, when no replica session holds it; any other is of an epoch before the state's
      // and is deleted where it is, at that machine's next start (a copy of an older epoch is never run).
      auto folder = PipelineLock::acquire(paths_, pipeline_);
      if (!folder) {
        if (folder.error().kind == ErrorKind::kLocked) return ok();
        return std::unexpected(folder.error());
      }
      SKIPPR_TRY(Wal::destroy(paths_.wal, wal_env_));
      std::error_code ec;
      std::filesystem::remove(paths_.root / "copy.json", ec);  // a record of a copy that is gone
      return ok();
    }
    if (!remote_) return Wal::destroy(paths_.wal, wal_env_);
    PipelineState state;
    state.epoch = new_epoch;
    return S3Wal::destroy_before_epoch(s3_wal_options(settings_, remote_->s3, pipeline_, state, *state_));
  });
  if (!epoch || !cluster_ || state_outlives_wal()) return epoch;
  // The peer's copy still holds the old epoch, complete: a promotion there would bring it back. Meeting the new,
  // empty WAL, the peer starts its copy again.
  auto state = state_->load();
  if (!state) return std::unexpected(state.error());
  const WalOptions o = disk_wal_options(*state);
  auto local = Wal::open(o);
  if (!local) return std::unexpected(local.error());
  ClusterOptions cluster = cluster_->options;
  cluster.term = state->term;
  auto wal = open_clustered_wal(std::move(*local), o, cluster);
  if (!wal) {
    return fail(wal.error().kind,
                fmt::format("pipeline '{}' is reset here (epoch {}), but its copy on {} still holds the old epoch: "
                            "{}. Run the RESET again once the peer is reachable; promoting that copy before then "
                            "would bring the old epoch back",
                            pipeline_, *epoch, cluster_->options.peer.str(), wal.error().message));
  }
  return epoch;
}

Status PipelineStorage::finish_interrupted_reset(uint64_t epoch, std::optional<uint64_t> epoch_on_disk) const {
  // On S3, opening the WAL deletes the objects of older epochs itself, and only those.
  if (remote_) return ok();
  return finish_interrupted_reset_with(epoch, epoch_on_disk, pipeline_, wal_location(), state_->where(),
                                       [&] { return Wal::destroy(paths_.wal, wal_env_); });
}

}  // namespace skippr
