#include "engine/pipeline_storage.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "clients/aws/aws_config.h"
#include "core/env.h"
#include "engine/reset.h"
#include "state/dynamodb_state_store.h"
#include "wal/clustered_wal.h"
#include "wal/s3_wal.h"

namespace skippr {

struct PipelineStorage::Remote {
  AwsService s3;
};

struct PipelineStorage::Cluster {
  ClusterOptions options;  // without the term, which is the state's
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
  cluster.term = state.term;
  return open_clustered_wal(std::move(*local), o, cluster);
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
  if (!copy->exists || copy->last_seq <= copy->landed_seq) {
    state.term = std::max(state.term, copy->fence_term);
    return ok();
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

Result<std::optional<uint64_t>> PipelineStorage::wal_epoch() const {
  if (remote_) return S3Wal::oldest_epoch(s3_wal_options(settings_, remote_->s3, pipeline_, {}, *state_));
  return Wal::epoch_on_disk(paths_.wal, wal_env_);
}

Result<uint64_t> PipelineStorage::reset() {
  auto epoch = reset_state_then_wal(*state_, [&](uint64_t new_epoch) -> Status {
    if (!remote_) return Wal::destroy(paths_.wal, wal_env_);
    PipelineState state;
    state.epoch = new_epoch;
    return S3Wal::destroy_before_epoch(s3_wal_options(settings_, remote_->s3, pipeline_, state, *state_));
  });
  if (!epoch || !cluster_) return epoch;
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
