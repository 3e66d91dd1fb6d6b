#include "wal/clustered/replica_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/config.h"
#include "core/crc32c.h"
#include "core/env.h"
#include "state/pipeline_state.h"
#include "wal/wal.h"

namespace skippr {

namespace {

using cluster::Channel;
using cluster::Frame;
using cluster::FrameMeta;
using cluster::FrameType;

// Beside a copy's WAL: the term of the primary that last wrote or checked it, and whether it holds everything that
// primary's WAL held at the time (false from the moment a copy is started again until the primary says it is done).
struct CopyRecord {
  uint64_t term = 0;
  bool complete = false;
};

std::filesystem::path copy_record_path(const PipelinePaths& paths) { return paths.root / "copy.json"; }

CopyRecord load_copy_record(const PipelinePaths& paths) {
  CopyRecord out;
  auto text = default_env().read_file(copy_record_path(paths));
  if (!text) return out;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return out;
  out.term = j.value("term", uint64_t{0});
  out.complete = j.value("complete", false);
  return out;
}

Status save_copy_record(const PipelinePaths& paths, const CopyRecord& record) {
  const nlohmann::json j = {{"term", record.term}, {"complete", record.complete}};
  return write_file_atomically(default_env(), copy_record_path(paths), j.dump() + "\n");
}

WalOptions copy_wal_options(const PipelinePaths& paths, const std::string& pipeline, const PipelineState& state) {
  WalOptions o;
  o.dir = paths.wal;
  o.pipeline = pipeline;
  o.epoch = state.epoch;
  o.lineage = state.lineage;
  o.initial_position = state.resume_position;
  return o;
}

}  // namespace

struct ReplicaServer::Impl {
  ReplicaOptions options;
  std::unique_ptr<cluster::Listener> listener;
  std::thread acceptor;

  std::mutex mu;
  std::condition_variable changed;
  bool stopping = false;
  std::list<Channel*> open_channels;       // ended at stop
  std::map<std::string, Channel*> owners;  // pipeline -> the session serving it
  std::list<std::thread> threads;          // one per connection, joined at stop (a session may be mid-fdatasync)

  void accept_loop() {
    while (true) {
      auto channel = listener->accept();
      {
        std::lock_guard lock(mu);
        if (stopping) return;
      }
      if (!channel) {
        spdlog::warn("replica: {}", channel.error().message);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      std::lock_guard lock(mu);
      threads.emplace_back([this, c = std::shared_ptr<Channel>(std::move(*channel))] { serve(*c); });
    }
  }

  // Takes `pipeline` for `channel`, ending the session that served it (a primary that reconnects after a failure
  // its old session has not noticed yet). False when stopping or the old one would not let go.
  bool claim(const std::string& pipeline, Channel* channel) {
    std::unique_lock lock(mu);
    auto it = owners.find(pipeline);
    if (it != owners.end()) it->second->shutdown();
    const bool free = changed.wait_for(lock, std::chrono::seconds(10),
                                       [&] { return stopping || owners.find(pipeline) == owners.end(); });
    if (!free || stopping) return false;
    owners[pipeline] = channel;
    return true;
  }

  void release(const std::string& pipeline, Channel* channel) {
    std::lock_guard lock(mu);
    auto it = owners.find(pipeline);
    if (it != owners.end() && it->second == channel) owners.erase(it);
    changed.notify_all();
  }

  void serve(Channel& channel) {
    {
      std::lock_guard lock(mu);
      if (stopping) return;
      open_channels.push_back(&channel);
    }
    if (channel.tls() && channel.sends_plaintext_frames(30)) {
      // Answered in plaintext, which that client reads: a configuration mistake it reports at once.
      refuse(channel, FrameMeta{}, "config",
             "this replica requires TLS: unset SKIPPR_CLUSTER_INSECURE and set SKIPPR_CLUSTER_TLS_CERT, _KEY and "
             "_CA on the primary (both sides must agree)");
    } else if (auto st = channel.accept_handshake(30); !st) {
      spdlog::warn("replica: {}", st.error().message);
    } else if (auto hello = channel.receive(options.idle_timeout_seconds); hello) {
      serve_session(channel, *hello);
    } else if (hello.error().kind == ErrorKind::kCorruption) {
      // Most often a TLS client at a plaintext replica: the answer below is not TLS, so its handshake fails with an
      // error it reports as a configuration mistake, instead of waiting out its timeout.
      spdlog::warn(
          "replica: {} does not speak plaintext cluster frames ({}); with --insecure both sides must set "
          "SKIPPR_CLUSTER_INSECURE=yes",
          channel.peer(), hello.error().message);
      refuse(channel, FrameMeta{}, "mismatch", "this replica speaks plaintext (--insecure)");
    }
    std::lock_guard lock(mu);
    open_channels.remove(&channel);
  }

  static void refuse(Channel& channel, const FrameMeta& id, std::string_view kind, const std::string& reason) {
    spdlog::warn("replica: refused {} for pipeline '{}': {}", channel.peer(), id.pipeline, reason);
    (void)channel.send(FrameType::kRefused, cluster::make_meta(id, {{"kind", kind}, {"reason", reason}}), {}, 5);
  }

  void serve_session(Channel& channel, const Frame& hello) {
    nlohmann::json meta;
    auto id = cluster::parse_meta(hello, meta);
    if (!id || hello.type != FrameType::kHello) {
      spdlog::warn("replica: {} did not start with a readable HELLO", channel.peer());
      return;
    }
    if (!is_valid_pipeline_name(id->pipeline)) {
      refuse(channel, *id, "mismatch", fmt::format("'{}' is not a pipeline name", id->pipeline));
      return;
    }
    const PipelinePaths paths = PipelinePaths::of(options.data_dir, id->pipeline);
    if (meta.value("probe", false)) {
      answer_copy_state(channel, *id, paths);
      return;
    }
    // A replaced primary is refused before it can end the live session of the one that replaced it.
    auto state = load_state(paths);
    if (!state) return refuse(channel, *id, "unavailable", state.error().message);
    if (refuse_older_term(channel, *id, *state)) return;
    if (!claim(id->pipeline, &channel)) {
      refuse(channel, *id, "busy", "another primary's session for this pipeline does not end");
      return;
    }
    run_session(channel, *id, paths, meta.value("landed", uint64_t{0}));
    release(id->pipeline, &channel);
  }

  // HELLO's answer: what the copy holds. Also the whole of a probe's conversation.
  bool answer_copy_state(Channel& channel, const FrameMeta& hello, const PipelinePaths& paths) {
    auto state = load_state(paths);
    auto inspection = Wal::inspect(paths.wal);
    if (!state || !inspection) {
      const Error& e = !state ? state.error() : inspection.error();
      refuse(channel, hello, "unavailable", fmt::format("the copy here cannot be read: {}", e.message));
      return false;
    }
    const CopyRecord record = load_copy_record(paths);
    const bool exists = !inspection->segments.empty();
    uint32_t last_crc = 0;
    for (const WalBatchInfo& b : inspection->batches) {
      if (b.seq == inspection->last_committed_seq) last_crc = b.crc;
    }
    const FrameMeta copy{hello.pipeline, exists ? inspection->lineage : state->lineage,
                         exists ? inspection->epoch : state->epoch, record.term, inspection->last_committed_seq};
    auto st = channel.send(FrameType::kCopyState,
                           cluster::make_meta(copy, {{"exists", exists},
                                                     {"complete", record.complete},
                                                     {"last_crc", last_crc},
                                                     {"landed", inspection->landed_watermark},
                                                     {"fence_term", state->term}}),
                           {}, 30);
    return st.has_value();
  }

  // A primary of a term below the highest this copy has seen was replaced: refused, whatever else is true.
  bool refuse_older_term(Channel& channel, const FrameMeta& session, const PipelineState& state) const {
    if (session.term >= state.term) return false;
    refuse(channel, session, "fenced",
           fmt::format("pipeline '{}' was promoted to term {} on {} and this primary is at term {}: it was "
                       "replaced and must not commit or land anything more (its committed batches are in the "
                       "copy, which the new primary lands)",
                       session.pipeline, state.term, options.data_dir.string(), session.term));
    return true;
  }

  // `landed`: the primary's landed watermark, applied before anything is copied, so a copy on a full disk frees
  // what has landed and can take the batches that follow.
  void run_session(Channel& channel, const FrameMeta& session, const PipelinePaths& paths, uint64_t landed) {
    auto lock = PipelineLock::acquire(paths, session.pipeline);
    if (!lock) {
      refuse(channel, session, "busy",
             fmt::format("pipeline '{}' runs on this machine (it was promoted here: {}); this copy is not a replica "
                         "any more",
                         session.pipeline, lock.error().message));
      return;
    }
    auto state = load_state(paths);  // a promotion may have come in between
    if (!state) return refuse(channel, session, "unavailable", state.error().message);
    if (refuse_older_term(channel, session, *state)) return;
    if (session.term > state->term) {
      state->term = session.term;  // from now on, every primary of a lower term is refused
      if (auto st = default_env().create_dirs(paths.root); !st) {
        return refuse(channel, session, "unavailable", st.error().message);
      }
      if (auto st = save_state(paths, *state); !st) return refuse(channel, session, "unavailable", st.error().message);
    }
    std::unique_ptr<Wal> wal;
    auto open_copy = [&]() -> Status {
      if (wal) return ok();
      PipelineState copy_state = *state;
      copy_state.epoch = session.epoch;
      copy_state.lineage = session.lineage;
      auto opened = Wal::open(copy_wal_options(paths, session.pipeline, copy_state));
      if (!opened) return std::unexpected(opened.error());
      wal = std::move(*opened);
      return ok();
    };
    std::error_code ec;
    if (landed > 0 && std::filesystem::exists(paths.wal, ec)) {
      // Only a copy of this lineage and epoch opens; another is started again by the primary anyway.
      if (!mark_landed(wal, open_copy, landed)) wal.reset();
    }
    if (!answer_copy_state(channel, session, paths)) return;
    while (true) {
      auto frame = channel.receive(options.idle_timeout_seconds);
      if (!frame) {
        if (frame.error().kind != ErrorKind::kUnavailable) spdlog::warn("replica: {}", frame.error().message);
        return;  // the primary went away; the copy stays as it is
      }
      nlohmann::json meta;
      auto id = cluster::parse_meta(*frame, meta);
      if (!id) return refuse(channel, session, "mismatch", id.error().message);
      if (id->pipeline != session.pipeline || id->lineage != session.lineage || id->epoch != session.epoch ||
          id->term != session.term) {
        return refuse(channel, session, "mismatch",
                      fmt::format("a {} frame names pipeline '{}' lineage {} epoch {} term {}, but this session is "
                                  "for pipeline '{}' lineage {} epoch {} term {}",
                                  cluster::to_string(frame->type), id->pipeline, id->lineage, id->epoch, id->term,
                                  session.pipeline, session.lineage, session.epoch, session.term));
      }
      Status applied = ok();
      switch (frame->type) {
        case FrameType::kResetCopy:
          applied = reset_copy(paths, session, *state, meta, id->seq, wal);
          break;
        case FrameType::kBatch: {
          applied = open_copy();
          if (!applied) break;
          if (id->seq != wal->next_seq()) {
            return refuse(channel, session, "mismatch",
                          fmt::format("batch {} arrived where the copy expects batch {} (replayed or out of order)",
                                      id->seq, wal->next_seq()));
          }
          const uint32_t crc = meta.value("crc", uint32_t{0});
          if (crc32c::value(frame->blob) != crc) {
            return refuse(channel, session, "mismatch", fmt::format("batch {} fails its checksum", id->seq));
          }
          auto committed = wal->commit(EncodedBatch{meta.value("rows", uint64_t{0}), std::move(frame->blob), crc},
                                       Position{meta.value("position_after", std::string())});
          if (!committed) {
            applied = std::unexpected(committed.error());
            break;
          }
          applied = channel.send(FrameType::kAck, cluster::make_meta(*id, nlohmann::json::object()), {}, 30);
          break;
        }
        case FrameType::kLanded:
          applied = mark_landed(wal, open_copy, id->seq);
          break;
        case FrameType::kCaughtUp: {
          applied = open_copy();
          if (applied) applied = mark_landed(wal, open_copy, meta.value("landed", uint64_t{0}));
          if (applied) applied = wal->sync();
          if (applied) applied = save_copy_record(paths, {session.term, true});
          if (!applied) break;
          FrameMeta ack = *id;
          ack.seq = wal->last_committed_seq();
          applied = channel.send(FrameType::kAck, cluster::make_meta(ack, nlohmann::json::object()), {}, 30);
          break;
        }
        default:
          return refuse(channel, session, "mismatch",
                        fmt::format("a {} frame is not expected from a primary", cluster::to_string(frame->type)));
      }
      if (!applied) {
        // The disk here failed (full, or an I/O error): the primary waits and retries, it must not take this for a
        // bad frame.
        spdlog::error("replica: pipeline '{}': {}", session.pipeline, applied.error().message);
        return refuse(channel, session, "unavailable", applied.error().message);
      }
    }
  }

  template <class OpenCopy>
  static Status mark_landed(std::unique_ptr<Wal>& wal, OpenCopy& open_copy, uint64_t seq) {
    SKIPPR_TRY(open_copy());
    const uint64_t upto = std::min(seq, wal->last_committed_seq());
    if (upto <= wal->landed_watermark()) return ok();
    return wal->mark_landed(upto);
  }

  // The copy does not continue the primary's WAL: it is started again at `first_seq`, marked incomplete until the
  // primary's CAUGHT_UP (so a promotion cannot pick up half a copy).
  Status reset_copy(const PipelinePaths& paths, const FrameMeta& session, PipelineState& state,
                    const nlohmann::json& meta, uint64_t first_seq, std::unique_ptr<Wal>& wal) {
    SKIPPR_TRY(default_env().create_dirs(paths.root));
    SKIPPR_TRY(save_copy_record(paths, {session.term, false}));
    wal.reset();
    SKIPPR_TRY(Wal::destroy(paths.wal));
    state.epoch = session.epoch;
    state.lineage = session.lineage;
    state.enabled = true;
    state.resume_position = Position{meta.value("position", std::string())};
    state.resumed_after.clear();
    SKIPPR_TRY(save_state(paths, state));
    WalOptions o = copy_wal_options(paths, session.pipeline, state);
    o.first_seq = std::max<uint64_t>(first_seq, 1);
    o.write_header_at_open = true;
    auto opened = Wal::open(o);
    if (!opened) return std::unexpected(opened.error());
    wal = std::move(*opened);
    spdlog::info("replica: pipeline '{}': copy started again at seq {} (lineage {}, epoch {}, term {})",
                 session.pipeline, first_seq, session.lineage, session.epoch, session.term);
    return ok();
  }
};

ReplicaServer::ReplicaServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<ReplicaServer>> ReplicaServer::start(const ReplicaOptions& options) {
  auto tls = cluster::TlsContext::make(options.tls, /*server=*/true);
  if (!tls) return std::unexpected(tls.error());
  SKIPPR_TRY(default_env().create_dirs(options.data_dir / "pipelines"));
  auto listener = cluster::Listener::listen(options.listen, *tls);
  if (!listener) return std::unexpected(listener.error());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->listener = std::move(*listener);
  Impl* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->accept_loop(); });
  return std::unique_ptr<ReplicaServer>(new ReplicaServer(std::move(impl)));
}

int ReplicaServer::port() const { return impl_->listener->port(); }

ReplicaServer::~ReplicaServer() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    for (Channel* c : impl_->open_channels) c->shutdown();
    impl_->changed.notify_all();
  }
  impl_->listener->shutdown();
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  // No thread is added any more; the sessions' channels are shut down, so each ends after its current step.
  for (std::thread& t : impl_->threads) t.join();
}

namespace {

// What a promotion checks and changes, for a caller that holds the pipeline's lock and has read what the copy holds
// (`inspection`). `term`: nullopt = one above every term the copy has seen (`skipprd promote`).
Result<Promotion> promote_locked_copy(const PipelinePaths& paths, const std::string& pipeline,
                                      const WalInspection& inspection, std::optional<uint64_t> term) {
  const std::string no_copy =
      fmt::format("there is no copy of pipeline '{}' in {}: this machine's replica never received it", pipeline,
                  paths.root.string());
  auto state = load_state(paths);
  if (!state) return std::unexpected(state.error());
  const CopyRecord record = load_copy_record(paths);
  if (inspection.segments.empty()) return fail(ErrorKind::kConfig, no_copy);
  // The WAL names what it holds; state.json may not (a copy that continued the WAL of a primary whose state is in
  // DynamoDB, which keeps only its term here).
  if (!inspection.lineage.empty()) {
    state->lineage = inspection.lineage;
    state->epoch = inspection.epoch;
  }
  if (state->lineage.empty()) return fail(ErrorKind::kConfig, no_copy);
  if (!record.complete) {
    return fail(term ? ErrorKind::kUnavailable : ErrorKind::kCorruption,
                fmt::format("the copy of pipeline '{}' in {} is incomplete (the primary was lost while it brought "
                            "the copy up to date), so it cannot be promoted: nothing was changed; bring the old "
                            "primary's machine back instead{}",
                            pipeline, paths.root.string(), term ? " (the pipeline runs there)" : ""));
  }
  const uint64_t seen = std::max(state->term, record.term);
  if (term && *term <= seen) {
    return fail(ErrorKind::kFenced,
                fmt::format("the copy of pipeline '{}' in {} was written at term {}, and this process's lease token "
                            "is {}: a newer primary wrote it; nothing was changed",
                            pipeline, paths.root.string(), seen, *term));
  }
  state->term = term.value_or(seen + 1);
  SKIPPR_TRY(save_state(paths, *state));
  SKIPPR_TRY(default_env().unlink(copy_record_path(paths)));  // it is this machine's WAL now, not a copy
  SKIPPR_TRY(default_env().fsync_dir(paths.root));
  return Promotion{state->term, inspection.last_committed_seq, inspection.landed_watermark, state->lineage};
}

}  // namespace

Result<Promotion> promote_copy(const std::filesystem::path& data_dir, const std::string& pipeline) {
  const PipelinePaths paths = PipelinePaths::of(data_dir, pipeline);
  std::error_code ec;
  if (!std::filesystem::exists(paths.wal, ec)) {
    return fail(ErrorKind::kConfig, fmt::format("there is no copy of pipeline '{}' in {}: this machine's replica "
                                                "never received it",
                                                pipeline, paths.root.string()));
  }
  auto lock = PipelineLock::acquire(paths, pipeline);
  if (!lock) {
    return fail(ErrorKind::kLocked,
                fmt::format("the copy of pipeline '{}' in {} is in use ({}): a primary still sends to it (a "
                            "session of a primary that was cut off ends after a minute of silence: run promote "
                            "again then), or the pipeline already runs here",
                            pipeline, paths.root.string(), lock.error().message));
  }
  auto inspection = Wal::inspect(paths.wal);
  if (!inspection) return std::unexpected(inspection.error());
  return promote_locked_copy(paths, pipeline, *inspection, std::nullopt);
}

Result<std::optional<Promotion>> take_over_copy(const PipelinePaths& paths, const std::string& pipeline,
                                                uint64_t term) {
  std::error_code ec;
  if (std::filesystem::exists(copy_record_path(paths), ec)) {
    auto inspection = Wal::inspect(paths.wal);
    if (!inspection) return std::unexpected(inspection.error());
    if (!inspection->segments.empty()) {
      auto promoted = promote_locked_copy(paths, pipeline, *inspection, term);
      if (!promoted) return std::unexpected(promoted.error());
      return promoted;
    }
    // A record without a WAL (a RESET deleted it, or a restart of the copy was cut short): nothing to promote.
    if (!load_copy_record(paths).complete) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("the copy of pipeline '{}' in {} was being started again when it was cut short, so "
                              "it cannot be promoted: the pipeline runs on the machine that holds its WAL",
                              pipeline, paths.root.string()));
    }
    SKIPPR_TRY(default_env().unlink(copy_record_path(paths)));
  }
  auto state = load_state(paths);
  if (!state) return std::unexpected(state.error());
  if (state->term >= term && state->term > 0) {
    return fail(ErrorKind::kFenced,
                fmt::format("the WAL of pipeline '{}' in {} was written at term {}, and this process's lease token "
                            "is {}: a newer primary wrote it; nothing was changed",
                            pipeline, paths.root.string(), state->term, term));
  }
  state->term = term;
  SKIPPR_TRY(default_env().create_dirs(paths.root));
  SKIPPR_TRY(save_state(paths, *state));
  return std::nullopt;
}

}  // namespace skippr
