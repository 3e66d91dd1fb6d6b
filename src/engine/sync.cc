#include "engine/sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/env.h"
#include "core/failpoint.h"
#include "core/identifier_limit.h"
#include "core/time_util.h"
#include "engine/bounded_queue.h"
#include "engine/chaos.h"
#include "engine/dead_letters.h"
#include "engine/injected_faults.h"
#include "engine/pending_parts.h"
#include "engine/periodic.h"
#include "engine/pipeline_storage.h"
#include "engine/sync_passes.h"
#include "serve/metrics.h"
#include "state/state_store.h"
#include "wal/wal.h"

namespace skippr {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kQueueDepth = 2;  // batches between reader and committer; bounds memory with the batch size
// Between committer and lander: up to this many batches and LANDING_QUEUE_BYTES, so many small batches (a push
// source's requests) can wait for one coalesced landing while the committer goes on at the WAL's pace.
constexpr size_t kLandQueueBatches = 4096;
// How long the lander waits with nothing to land before the sink lets go of its destination (Sink::idle): long
// enough that a steady flow of batches keeps it, short enough that readers get a DuckDB file between polls.
constexpr auto kSinkIdleAfter = std::chrono::seconds(1);
constexpr int kInterruptedExit = 130;  // 128 + SIGINT, as a shell reports an interrupted command
// A batch is cut once it holds this many streams: a destination lands all of a batch's tables in one transaction, and
// what a transaction holds per table (DuckDB's local storage, a Postgres COPY each) must stay bounded by settings,
// not by the number of tables a source reads (1,000 tables in one transaction exhausted DuckDB's 64 MiB).
constexpr size_t kMaxStreamsPerBatch = 64;

struct ReadBatch {
  std::vector<Batch> parts;  // one per stream (core/batch.h)
  EncodedBatch encoded;      // the WAL record's columns, encoded here so the committer only appends and syncs
  Position position_after;
  std::vector<DeadLetter> dead_letters;              // committed together with the batch
  std::optional<int64_t> oldest_record_time_micros;  // Poll::oldest_record_time_micros of its first records
};

struct CommittedBatch {
  BatchId id;
  uint64_t seq = 0;
  std::vector<Batch> parts;                          // one per stream; each lands in its stream's table
  Position position_after;                           // goes into the destination's ledger with the id
  bool replayed = false;                             // committed by an earlier run
  std::optional<int64_t> oldest_record_time_micros;  // this run's batches only: the WAL does not keep it
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The source time of a batch's oldest record, known only when every poll of the batch told its own: a CDC batch
// that also holds the snapshot's last rows has no honest figure.
class OldestRecordTime {
 public:
  void add(const std::optional<int64_t>& poll_oldest) {
    if (!poll_oldest) {
      unknown_ = true;
    } else if (!oldest_) {
      oldest_ = poll_oldest;
    }
  }
  std::optional<int64_t> value() const { return unknown_ ? std::nullopt : oldest_; }
  void reset() { *this = {}; }

 private:
  std::optional<int64_t> oldest_;
  bool unknown_ = false;
};

class SyncRun {
 public:
  SyncRun(const Config& config, const Settings& settings, const SyncOptions& options, Reporter& reporter)
      : config_(config), settings_(settings), options_(options), reporter_(reporter) {}
  // The WAL, the sink, the source and the dead-letter file are closed while the pipeline is still held; only then
  // does the lease go (a second copy must not open them half-closed). Its callback is cleared first.
  ~SyncRun() {
    if (metrics_) metrics_->detach(snapshot());
    if (lease_) lease_->on_lost({});
    wal_.reset();
    sink_.reset();
    source_.reset();
    dead_letters_.reset();
    lease_.reset();
  }

  SyncResult run() {
    started_ = Clock::now();
    metrics_ = process_metrics().add(options_.pipeline, [this] { return snapshot(); });
    Status st = prepare();
    if (!st) return finish_with(st.error());
    save_run_stats(snapshot(), /*exit_code=*/-1);  // a run killed at once still counts in SHOW STATS
    stages();
    return finish();
  }

 private:
  // Everything that can fail on a user's mistake happens here, before anything is read or committed.
  Status prepare() {
    auto pipeline = config_.pipeline(options_.pipeline);
    if (!pipeline) return std::unexpected(pipeline.error());
    pipe_ = *pipeline;
    auto storage = PipelineStorage::open(settings_, pipe_->name, options_.wal_env);
    if (!storage) return std::unexpected(storage.error());
    storage_ = std::move(*storage);
    paths_ = storage_->paths();
    // DATA_DIR keeps this machine's part even when WAL and state live elsewhere: dead letters, caches, the chaos log.
    SKIPPR_TRY(default_env().create_dirs(paths_.root));

    const ConnectorConfig& source_cfg = config_.sources.at(pipe_->data_source);
    const ConnectorConfig& sink_cfg = config_.sinks.at(pipe_->data_sink);
    auto source = source_cfg.spec->make_source(context_for(source_cfg));
    if (!source) return std::unexpected(source.error());
    source_ = with_injected_faults(std::move(*source), pipe_->name);
    ConnectorContext sink_context = context_for(sink_cfg);
    sink_context.source_streams = source_->names_streams();
    sink_context.source_keys = source_keys_streams(source_cfg);
    auto sink = sink_cfg.spec->make_sink(sink_context);
    if (!sink) return std::unexpected(sink.error());
    sink_ = std::move(*sink);

    StateStore& store = storage_->state();
    auto lease = storage_->acquire([this] { return stop_requested(); });
    if (!lease) return std::unexpected(lease.error());
    lease_ = std::move(*lease);
    // Taken over (this process was paused or cut off past its lease): stop at once, commit and land nothing more.
    lease_->on_lost([this](const Error& e) {
      record_error(e);
      stopping_ = true;
      to_commit_.close_and_clear();
      to_land_.close_and_clear();
    });

    auto state = store.load();
    if (!state) return std::unexpected(state.error());
    state_ = *state;
    stats_before_ = store.load_stats();
    if (!state_.enabled) {
      return fail(ErrorKind::kConfig,
                  fmt::format("pipeline '{}' is disabled; enable it with: skipprd query --sql \"ENABLE PIPELINE {}\"",
                              pipe_->name, pipe_->name));
    }
    // The source first: a source that cannot be read (a missing bucket, refused credentials) stops the run before
    // the destination is touched, even on a first run, where the sink is opened early to read its ledger.
    SKIPPR_TRY(source_->open());
    SKIPPR_TRY(storage_->discard_wal_of_another_lineage(state_));
    auto wal_epoch = storage_->wal_epoch();
    if (!wal_epoch) return std::unexpected(wal_epoch.error());
    if ((state_.lineage.empty() || storage_->state_outlives_wal()) && !*wal_epoch) {
      // No lineage and no WAL: a first run here, or DATA_DIR was lost. The destination decides where to start
      // (before the lineage is saved, so a run killed in between asks again). In clustered mode the peer is asked
      // first: a copy of this pipeline there means this machine lost its DATA_DIR, and the copy must be promoted.
      // A state that outlives the WAL (clustered, DynamoDB) starts afresh the same way, with a new lineage: the
      // batches of its old one are all landed or in the peer's copy, and new ones must not reuse their ids.
      SKIPPR_TRY(storage_->fresh_start_with_peer(state_));
      SKIPPR_TRY(start_from_destination());
      SKIPPR_TRY(lease_->check());  // the destination may have kept us waiting past the lease
      SKIPPR_TRY(store.save(state_));
    } else if (state_.lineage.empty()) {
      state_.lineage = new_lineage();
      spdlog::info("pipeline '{}': its state now has a lineage ({}); batches already in the WAL keep their ids",
                   pipe_->name, state_.lineage);
      SKIPPR_TRY(store.save(state_));
    }
    SKIPPR_TRY(storage_->finish_interrupted_reset(state_.epoch, *wal_epoch));

    if (settings_.chaos_mode.value_or(pipe_->chaos_mode)) {
      start_chaos({settings_.chaos_min_seconds, settings_.chaos_max_seconds,
                   settings_.chaos_seed.value_or(random_chaos_seed()), paths_.chaos_log, settings_.chaos_failpoint,
                   settings_.chaos_failpoint_pass});
    }

    SKIPPR_TRY(lease_->check());
    auto wal = storage_->open_wal(state_, *lease_);
    if (!wal) return std::unexpected(wal.error());
    wal_ = std::move(*wal);

    uint64_t dropped = 0;
    auto dead_letters = DeadLetterFile::open(paths_.dead_letter, state_.epoch, wal_->last_committed_seq(), &dropped);
    if (!dead_letters) return std::unexpected(dead_letters.error());
    dead_letters_.emplace(std::move(*dead_letters));
    if (dropped > 0) {
      spdlog::info("dropped {} dead-letter line(s) of batches that were never committed; they are read again", dropped);
    }

    if (pipe_->landing == Landing::kReplacePartition || pipe_->landing == Landing::kReplaceTable) {
      passes_.emplace(pipe_->landing == Landing::kReplaceTable, wal_->last_position());
    }
    source_->request_resyncs(state_.resync_requests);
    SKIPPR_TRY(source_->seek(passes_ ? passes_->source_start() : wal_->last_position()));
    // A sink that is misconfigured (wrong password, a table it cannot merge into) stops the run here, before
    // anything is committed; one that is merely unreachable is retried by the land stage.
    if (sink_open_) return ok();
    if (auto st = sink_->open(); st) {
      sink_open_ = true;
    } else if (!is_transient(st.error())) {
      return st;
    } else {
      spdlog::warn("the sink is not reachable yet (retried while batches are read): {}", st.error().message);
    }
    return ok();
  }

  static bool is_transient(const Error& e) {
    return e.kind == ErrorKind::kUnavailable || e.kind == ErrorKind::kUnknownOutcome;
  }

  // A new state (lineage, epoch, where the source starts) for a pipeline DATA_DIR knows nothing of. A destination
  // whose ledger holds batches of the pipeline is the truth then: new batches get an epoch above all of its (so
  // merge order tokens stay newer than what is there), and a source that can seek resumes after the newest batch
  // there instead of reading everything again. Local state is a cache of what an exactly-once destination records.
  Status start_from_destination() {
    state_.lineage = new_lineage();
    if (!sink_->keeps_ledger()) return ok();
    SKIPPR_TRY(open_sink_waiting());
    SKIPPR_TRY(waiting_out_outages([this] { return sink_->take_over(state_.lineage); }));
    // A destination may still be finishing what a killed process started (its statements outlive it): the tip is
    // read once that is done.
    auto tip = waiting_out_outages([this] { return sink_->ledger_tip(); });
    if (!tip) return std::unexpected(tip.error());
    if (!*tip) return ok();
    const LedgerTip& held = **tip;
    if (storage_->state_outlives_wal() && held.max_epoch < state_.epoch) {
      // A RESET moved the state past every batch there: the source starts where the RESET left it.
      spdlog::info(
          "pipeline '{}' {}; {} holds batches up to epoch {} only, and the state is at epoch {} (a RESET): "
          "the source starts where the state says",
          pipe_->name, why_starting_afresh(), pipe_->data_sink, held.max_epoch, state_.epoch);
      return ok();
    }
    state_.epoch = std::max(state_.epoch, held.max_epoch + 1);
    const std::string sink_name = fmt::format("sink '{}'", pipe_->data_sink);
    if (held.position_after.empty()) {
      spdlog::warn(
          "pipeline '{}' {}, and {} holds its batches up to {} without a source position "
          "(written by an older version): the source is read from the start, so an append table receives those rows "
          "again (merge_by_key converges)",
          pipe_->name, why_starting_afresh(), sink_name, held.batch_id);
    } else if (!source_->resumes_from_destination()) {
      spdlog::warn(
          "pipeline '{}' {}, and {} holds its batches up to {}; source '{}' cannot go back "
          "to a position committed elsewhere, so it is read from the start: nothing is lost, an append table may "
          "receive rows again (merge_by_key converges)",
          pipe_->name, why_starting_afresh(), sink_name, held.batch_id, pipe_->data_source);
    } else {
      state_.resume_position = held.position_after;
      state_.resumed_after = held.batch_id;
      spdlog::warn(
          "pipeline '{}' {}, but {} holds its batches up to {}: the source resumes after "
          "that batch, at epoch {}",
          pipe_->name, why_starting_afresh(), sink_name, held.batch_id, state_.epoch);
    }
    return ok();
  }

  // Why a run starts afresh, as the sentences of start_from_destination say it.
  std::string why_starting_afresh() const {
    if (storage_->state_outlives_wal()) {
      return fmt::format("has no WAL on this machine (its state is in {})", storage_->state().where());
    }
    return "has no state in " +
           (settings_.state_store == "local" ? "DATA_DIR " + settings_.data_dir.string() : storage_->state().where());
  }

  // Opens the sink, retrying while it is unreachable: with --once for SINK_RETRY_SECONDS, else until stopped.
  Status open_sink_waiting() {
    SKIPPR_TRY(waiting_out_outages([this] { return sink_->open(); }));
    sink_open_ = true;
    return ok();
  }

  // `step` (a read of the destination before anything is read from the source), retried while the destination is
  // unreachable or busy: with --once for SINK_RETRY_SECONDS, else until stopped.
  template <class Step>
  auto waiting_out_outages(Step&& step) -> decltype(step()) {
    const auto started = Clock::now();
    auto backoff = std::chrono::milliseconds(100);
    while (true) {
      auto done = step();
      if (done) {
        metrics_->clear_error();
        return done;
      }
      if (!is_transient(done.error()) || give_up_retrying(started)) {
        // "Run again" only when waiting can fix it: a folder that cannot be made or refused credentials cannot.
        return fail(done.error().kind,
                    fmt::format("pipeline '{}' has no state yet, and what the destination already holds "
                                "could not be read, so nothing was read from the source{}: {}",
                                pipe_->name, is_transient(done.error()) ? "; run again once it is reachable" : "",
                                done.error().message));
      }
      metrics_->note_error(done.error().message);
      spdlog::warn("reading what the destination holds (retried): {}", done.error().message);
      sleep_before_retry(backoff, started);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }

  // Waits `backoff` before the next attempt, in short steps, so a stop request (or the end of the --once retry
  // window) is honoured within a tenth of a second, not after a backoff of several seconds.
  void sleep_before_retry(std::chrono::milliseconds backoff, Clock::time_point failing_since) {
    const auto until = Clock::now() + backoff;
    while (Clock::now() < until && !give_up_retrying(failing_since)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  ConnectorContext context_for(const ConnectorConfig& c) const { return connector_context(*pipe_, c, paths_.root); }

  void stages() {
    const auto pending = wal_->pending();
    if (passes_) add([&](RunTotals& t) { t.replace_landing = to_string(pipe_->landing); });
    reporter_.sync_start(pipe_->name, state_.epoch, pending.size());
    std::thread reader([this] { guarded("reader", [this] { read_stage(); }); });
    std::thread committer([this] { guarded("committer", [this] { commit_stage(); }); });
    // Saved every few seconds from the process's periodic thread (engine/periodic.h), not a thread per run.
    auto stats_saver = run_periodically(std::chrono::seconds(5), [this] { save_stats_if_changed(); });
    guarded("lander", [&] { land_stage(pending); });
    // The lander stops first only on failure; unblock the other stages then (a commit waiting on a full disk for
    // batches to land included).
    stopping_ = true;
    wal_->stop_waiting();
    to_commit_.close_and_clear();
    to_land_.close_and_clear();
    reader.join();
    committer.join();
    stats_saver.reset();  // waits for a save in progress
  }

  // An exception escaping a stage is a bug (ours or a library's), yet it must end this run, not the process: under
  // serve the other pipelines keep running. The run stops as after any failed stage, with the exception as its
  // error (exit 1).
  template <class F>
  void guarded(std::string_view stage, F&& body) {
    try {
      body();
      return;
    } catch (const std::exception& e) {
      record_error(unexpected_exception(stage, e.what()));
    } catch (...) {
      record_error(unexpected_exception(stage, "an exception of unknown type"));
    }
    stopping_ = true;
    wal_->stop_waiting();
    to_commit_.close_and_clear();
    to_land_.close_and_clear();
  }

  bool stop_requested() const { return stopping_ || (options_.stop_requested && options_.stop_requested->load()); }

  // Stage 1: poll the source, cut batches at BUFFER_THRESHOLD_BYTES / _SECONDS or when the source is drained, and
  // encode them for the WAL (this overlaps the committer's fdatasync of the batch before).
  void read_stage() {
    PendingParts pending;
    std::vector<DeadLetter> pending_dead;
    OldestRecordTime pending_oldest;
    Position position;
    bool position_to_keep = false;
    auto batch_started = Clock::now();
    while (!stop_requested()) {
      if (passes_ && passes_->begin_poll()) {
        // A full refresh reads the source from its start every sync.
        if (auto st = source_->seek(Position{}); !st) {
          record_error(st.error());
          break;
        }
      }
      Budget budget;
      const size_t have = pending.byte_size();
      budget.max_bytes = settings_.buffer_threshold_bytes > have ? settings_.buffer_threshold_bytes - have : 1;
      budget.batch_bytes = settings_.buffer_threshold_bytes;
      auto polled = source_->poll(budget);
      if (!polled) {
        record_error(polled.error());
        break;
      }
      if (const size_t got = polled->records.rows + total_rows(polled->other_streams); got > 0) {
        // Records that do not fit the batch being built (a field of another type, or one that differs only in
        // letter case) cut it at the position before them, and start the next one. Each batch then lands on its
        // own (the sink maps names and converts or rejects values), so nothing blocks here. A poll's streams stay
        // together: one of them not fitting cuts before all of them.
        bool fits = pending.fits(polled->records);
        for (const Batch& other : polled->other_streams) fits = fits && pending.fits(other);
        if (!fits &&
            !cut_batch(pending, pending_dead, pending_oldest, committed_position(position, false, pending.rows()))) {
          break;
        }
        if (pending.rows() == 0) batch_started = Clock::now();
        bool added = pending.add(std::move(polled->records));
        for (Batch& other : polled->other_streams) added = pending.add(std::move(other)) && added;
        if (!added) {
          record_error({ErrorKind::kInternal,
                        fmt::format("source '{}' gave one stream twice in one poll, with fields that disagree; this "
                                    "is a bug in skipprd, please report it",
                                    pipe_->data_source)});
          break;
        }
        pending_oldest.add(polled->oldest_record_time_micros);
        add([&](RunTotals& t) { t.rows_read += got; });
        reporter_.rows_read(snapshot());
      }
      if (polled->backlog && source_backlog_unit()) metrics_->source_backlog({source_backlog_unit(), *polled->backlog});
      for (auto& letter : polled->dead_letters) {
        // A letter the source did not tag is of the poll's stream when the poll has one only.
        if (letter.stream.empty() && polled->other_streams.empty()) letter.stream = polled->records.stream;
        pending_dead.push_back(std::move(letter));
      }
      position = polled->position_after;
      position_to_keep = position_to_keep || polled->keep_position;
      // A full refresh that read nothing would empty the table: refused unless the pipeline expects it, before its
      // end is committed (the table stays as it is, and the next run reads the source again).
      if (passes_ && polled->drained && !pipe_->allow_empty_replace && passes_->ends_empty_refresh(pending.rows())) {
        record_error(empty_refresh_error(pending_dead.size()));
        break;
      }
      // The end of a sync is committed even when its last poll brought nothing (see SyncPasses::needs_end_batch).
      if (passes_ && polled->drained && passes_->needs_end_batch()) position_to_keep = true;
      // Dead letters alone make a (row-less) batch too: they must be committed with the position that skips them;
      // so does a position the source asks to keep.
      const bool cut =
          (pending.rows() > 0 || !pending_dead.empty() || position_to_keep) &&
          (pending.byte_size() >= settings_.buffer_threshold_bytes || pending.streams() >= kMaxStreamsPerBatch ||
           seconds_since(batch_started) >= settings_.buffer_threshold_seconds || polled->drained);
      if (cut && !cut_batch(pending, pending_dead, pending_oldest,
                            committed_position(position, polled->drained, pending.rows()))) {
        break;
      }
      if (cut) position_to_keep = false;
      if (polled->drained) {
        if (passes_) passes_->drained();
        if (options_.once) {
          drained_ = true;
          break;
        }
        if (!source_->streaming()) sleep_unless_stopped(settings_.sync_frequency_seconds);
      }
    }
    to_commit_.close();
  }

  // The position a batch of `rows` is committed with: the source's own, or (replace landings) wrapped with its sync.
  Position committed_position(const Position& source, bool drained, size_t rows) {
    return passes_ ? passes_->commit_position(source, drained, rows) : source;
  }

  Error empty_refresh_error(size_t dead_letters) const {
    return {ErrorKind::kBadInput,
            fmt::format("pipeline '{}': this sync read no rows from source '{}'{}, and landing replace_table would "
                        "empty the destination table with it; nothing was replaced. Check the source (a path that "
                        "matches no file, a share that is not mounted, an export that failed), or add "
                        "allow_empty_replace: true to the pipeline when an empty source is expected",
                        pipe_->name, pipe_->data_source,
                        dead_letters == 0
                            ? ""
                            : fmt::format(" (its {} records were all bad ones, for the dead letters)", dead_letters))};
  }

  // Encodes `pending` with the position after it and hands it to the committer; false when the run must stop.
  bool cut_batch(PendingParts& pending, std::vector<DeadLetter>& pending_dead, OldestRecordTime& pending_oldest,
                 const Position& position) {
    std::vector<Batch> parts = pending.take();
    auto encoded = wal_->encode_parts(parts);
    if (!encoded) {
      record_error(encoded.error());
      return false;
    }
    if (!to_commit_.push(
            {std::move(parts), std::move(*encoded), position, std::move(pending_dead), pending_oldest.value()})) {
      return false;
    }
    ++batches_cut_;
    pending_dead.clear();
    pending_oldest.reset();
    return true;
  }

  // Stage 2: commit to the WAL (durable), acknowledge the source, hand over to the sink stage.
  void commit_stage() {
    while (auto item = to_commit_.pop()) {
      if (stop_requested()) break;
      // Dead letters first, tagged with the seq this commit will get: lines of a commit that never happened are
      // dropped at the next start (DeadLetterFile::open), so each bad record is written exactly once.
      if (auto st = dead_letters_->append(wal_->next_seq(), item->dead_letters); !st) {
        record_error(st.error());
        stopping_ = true;
        to_commit_.close_and_clear();
        break;
      }
      const auto commit_started = Clock::now();
      auto id = wal_->commit(item->encoded, item->position_after);
      if (id) metrics_->observe_commit(Clock::now() - commit_started);
      item->encoded = {};  // not needed any more; free it before waiting on the land queue
      if (!id) {
        record_error(id.error());
        stopping_ = true;
        to_commit_.close_and_clear();
        break;
      }
      if (auto st = source_->acknowledge(source_position(item->position_after)); !st) {
        spdlog::warn("source acknowledge failed (the WAL stays the truth; it is retried on the next commit): {}",
                     st.error().message);
      }
      const uint64_t rows = total_rows(item->parts);
      const size_t bytes = total_bytes(item->parts);
      add([&](RunTotals& t) {
        t.rows_committed += rows;
        t.dead_letters += item->dead_letters.size();
        for (const auto& letter : item->dead_letters) {
          if (!letter.stream.empty()) t.stream_dead_letters[letter.stream] += 1;
        }
        t.batches_committed += 1;
        t.batches_waiting += 1;  // until it lands (mark_landed); finish() counts the WAL's pending ones again
        t.wal_bytes = wal_->bytes_on_disk();
      });
      reporter_.batch_committed(*id, rows, snapshot());
      // The WAL keeps the source's names; the sink gets names it can keep.
      for (Batch& part : item->parts) fit_field_names(part.schema, sink_identifier_limit());
      if (!to_land_.push({*id, id->seq, std::move(item->parts), std::move(item->position_after), /*replayed=*/false,
                          item->oldest_record_time_micros},
                         bytes)) {
        break;
      }
    }
    to_land_.close();
  }

  // Stage 3 (this thread): first the batches an earlier run committed but did not land, then the new ones; in
  // groups when several wait and the sink lands a group atomically (coalesced landing).
  void land_stage(const std::vector<WalBatchInfo>& pending) {
    add([&](RunTotals& t) { t.batches_waiting += pending.size(); });  // an earlier run's, landed first
    std::vector<CommittedBatch> group;
    size_t group_bytes = 0;
    for (const auto& info : pending) {
      auto parts = wal_->read_parts(info);
      if (!parts) {
        // The batches before an unreadable one still land (each lands once, in order); nothing after it does.
        if (!group.empty()) land_group(group);
        return record_error(parts.error());
      }
      const size_t bytes = total_bytes(*parts);
      if (!group.empty() && (group.size() >= max_group_batches() || group_bytes + bytes > max_group_bytes())) {
        if (!land_group(group)) return;
        group.clear();
        group_bytes = 0;
      }
      for (Batch& part : *parts) fit_field_names(part.schema, sink_identifier_limit());
      group.push_back({info.id, info.seq, std::move(*parts), info.position_after, /*replayed=*/true, std::nullopt});
      group_bytes += bytes;
    }
    if (!group.empty() && !land_group(group)) return;
    while (true) {
      // Nothing came for a while: the sink lets go of what it holds while landing (sinks/duckdb: the file).
      if (sink_open_ && !to_land_.wait_for_item(kSinkIdleAfter)) sink_->idle();
      group = to_land_.pop_up_to(max_group_batches(), max_group_bytes());
      if (group.empty() || !land_group(group)) return;
    }
  }

  // Field names longer than the destination keeps are landed under shortened ones (core/identifier_limit.h).
  const BacklogUnit* source_backlog_unit() const {
    const auto& unit = config_.sources.at(pipe_->data_source).spec->backlog;
    return unit ? &*unit : nullptr;
  }
  size_t sink_identifier_limit() const { return config_.sinks.at(pipe_->data_sink).spec->max_identifier_bytes; }
  size_t max_group_batches() const { return sink_->lands_groups() ? settings_.landing_group_batches : 1; }
  size_t max_group_bytes() const { return settings_.landing_queue_limit(); }

  // Lands a group of committed batches (in WAL order) in one sink call, retrying definite and unknown-outcome
  // failures with backoff, always with the same BatchIds. Gives up after SINK_RETRY_SECONDS with --once, after the
  // grace period once a stop was requested. A group of several that fails is landed again one batch at a time
  // (each with its own retries), so the batches before one at fault land and the error names that batch.
  bool land_group(std::span<const CommittedBatch> group) {
    const bool retryable_sink = sink_->guarantee() != Guarantee::kNone;
    if (group.front().replayed && !retryable_sink) {
      for (const auto& b : group)
        spdlog::warn("{}: not re-sent after a restart (the sink's guarantee is 'none')", b.id.str());
      return mark_landed(group, std::vector<BatchLanded>(group.size()));
    }
    // A batch of several streams is one item per stream, in one sink call: a sink with transactions lands all of a
    // batch's streams in one (sinks without land them one table at a time, each under its ledger).
    std::vector<BatchToLand> items;
    for (const auto& b : group) {
      for (const Batch& part : b.parts) items.push_back({part, b.id, b.position_after, b.replayed});
    }
    std::optional<Clock::time_point> failing_since;
    auto backoff = std::chrono::milliseconds(100);
    while (true) {
      // Nothing lands once another process holds the pipeline (a lease in a remote state store can be taken over).
      if (auto held = lease_->check(); !held) {
        record_error(held.error());
        return false;
      }
      Result<std::vector<BatchLanded>> landed = std::vector<BatchLanded>();
      if (!sink_open_) {
        if (auto st = sink_->open(); st) {
          sink_open_ = true;
        } else {
          landed = std::unexpected(st.error());
        }
      }
      if (sink_open_) {
        if (items.size() > 1 && spdlog::should_log(spdlog::level::debug)) {
          spdlog::debug("landing {} in one transaction", group_ids(items));
        }
        const auto write_started = Clock::now();
        landed = sink_->write_group(items);
        if (landed) metrics_->observe_landing(Clock::now() - write_started);
        count_attempts(landed, items.size());
      }
      if (landed && landed->size() != items.size()) {
        record_error({ErrorKind::kInternal,
                      fmt::format("the sink reported {} outcomes for {} batch parts", landed->size(), items.size())});
        return false;
      }
      if (landed) {
        if (failing_since) spdlog::info("sink is available again; {} landed", group_ids(items));
        return mark_landed(group, per_batch(group, *landed), &*landed);
      }
      const Error& e = landed.error();
      // A failed group is landed again one batch at a time, whatever the failure: a destination's error does not
      // always say whether it is about one batch (a constraint, a value) or the connection, so the batches before
      // a faulty one land, the error names it, and an outage is retried batch by batch. Only a lost lease stops.
      if (group.size() > 1 && e.kind != ErrorKind::kFenced) {
        spdlog::warn("landing {} in one transaction failed; landing them one at a time: {}", group_ids(items),
                     e.message);
        for (size_t i = 0; i < group.size(); ++i) {
          if (!land_group(group.subspan(i, 1))) return false;
        }
        return true;
      }
      if (!is_transient(e) || !retryable_sink) {
        record_error(e);
        return false;
      }
      for (auto& item : items) item.maybe_landed = true;  // the failed attempt may have landed it
      metrics_->note_error(e.message);
      if (!failing_since) {
        failing_since = Clock::now();
        spdlog::warn("writing {} failed, retrying with backoff: {}", group_ids(items), e.message);
      }
      if (give_up_retrying(*failing_since)) {
        record_error(e);
        return false;
      }
      sleep_before_retry(backoff, *failing_since);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }

  // The outcome of each batch from those of its parts: already applied when every part was (a replay), and the rows
  // its applied parts rejected.
  static std::vector<BatchLanded> per_batch(std::span<const CommittedBatch> group,
                                            const std::vector<BatchLanded>& per_part) {
    std::vector<BatchLanded> out;
    size_t next = 0;
    for (const auto& b : group) {
      BatchLanded landed{WriteOutcome::kAlreadyApplied, 0};
      for (size_t i = 0; i < b.parts.size(); ++i, ++next) {
        if (per_part[next].outcome == WriteOutcome::kApplied) {
          landed.outcome = WriteOutcome::kApplied;
          landed.rows_rejected += per_part[next].rows_rejected;
        }
      }
      out.push_back(landed);
    }
    return out;
  }

  void count_attempts(const Result<std::vector<BatchLanded>>& landed, size_t batches) {
    if (!landed) {
      metrics_->count_attempt(
          landed.error().kind == ErrorKind::kUnknownOutcome ? SinkAttempt::kUnknownOutcome : SinkAttempt::kFailed,
          batches);
      return;
    }
    for (const auto& b : *landed) {
      metrics_->count_attempt(
          b.outcome == WriteOutcome::kAlreadyApplied ? SinkAttempt::kAlreadyApplied : SinkAttempt::kApplied, 1);
    }
  }

  bool give_up_retrying(Clock::time_point failing_since) {
    if (stopping_) return true;  // the run is over (a stage failed, or the lease was lost)
    if (options_.stop_requested && options_.stop_requested->load()) {
      if (!stop_seen_) stop_seen_ = Clock::now();
      return seconds_since(*stop_seen_) >= options_.shutdown_grace_seconds;
    }
    return options_.once && seconds_since(failing_since) >= settings_.sink_retry_seconds;
  }

  // The whole group is in the destination: one LANDED mark (the watermark) covers every batch of it. `per_part`: the
  // sink's outcome of each part, in order (nullptr when the sink was not called), for the rows landed per stream.
  bool mark_landed(std::span<const CommittedBatch> group, const std::vector<BatchLanded>& landed,
                   const std::vector<BatchLanded>* per_part = nullptr) {
    failpoint::hit(failpoint::kSinkAfterCommit);
    if (group.size() > 1) failpoint::hit(failpoint::kSinkAfterGroupCommit);
    if (auto st = wal_->mark_landed(group.back().seq); !st) {
      record_error(st.error());
      return false;
    }
    size_t next_part = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      const CommittedBatch& b = group[i];
      const bool already = landed[i].outcome == WriteOutcome::kAlreadyApplied;
      const uint64_t rows = total_rows(b.parts);
      const uint64_t rejected = already ? 0 : std::min<uint64_t>(landed[i].rows_rejected, rows);
      add([&](RunTotals& t) {
        for (const Batch& part : b.parts) {
          const BatchLanded* outcome = per_part ? &(*per_part)[next_part++] : nullptr;
          if (part.stream.empty() || (outcome ? outcome->outcome : landed[i].outcome) != WriteOutcome::kApplied) {
            continue;
          }
          const uint64_t part_rejected = outcome ? std::min<uint64_t>(outcome->rows_rejected, part.rows) : 0;
          t.stream_rows_landed[part.stream] += part.rows - part_rejected;
          if (part_rejected > 0) t.stream_rows_rejected[part.stream] += part_rejected;
        }
        t.rows_landed += rows - rejected;
        t.rows_rejected += rejected;
        t.batches_landed += 1;
        if (t.batches_waiting > 0) t.batches_waiting -= 1;
        t.batches_replayed += b.replayed ? 1 : 0;
        t.already_applied += already ? 1 : 0;
        t.last_batch_landed = b.id.str();
        t.wal_bytes = wal_->bytes_on_disk();
      });
      if (passes_) count_replaced(b, rows - rejected, already);
      if (rejected > 0) {
        spdlog::warn("{}: {} row(s) did not fit their columns and went to the destination's rejects table", b.id.str(),
                     rejected);
      }
      std::optional<double> lag;
      if (b.oldest_record_time_micros) lag = static_cast<double>(now_micros() - *b.oldest_record_time_micros) / 1e6;
      metrics_->landed(lag);
      reporter_.batch_landed(b.id, rows, b.replayed, already, lag, snapshot());
    }
    return true;
  }

  // Replace landings: the rows each sync landed in this run, and the syncs that ended (each replaced what it read);
  // a batch the destination already had was landed, and did its replacing, in an earlier run.
  void count_replaced(const CommittedBatch& b, uint64_t rows, bool already) {
    const SyncMark mark = sync_mark_of(b.position_after, b.id);
    uint64_t& in_sync = rows_by_sync_[mark.sync_id];
    if (!already) in_sync += rows;
    if (!mark.ends_sync) return;
    if (!already) {
      add([&](RunTotals& t) {
        t.syncs_replaced += 1;
        t.rows_in_replaced_syncs += in_sync;
      });
    }
    rows_by_sync_.erase(mark.sync_id);
  }

  void sleep_unless_stopped(double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (!stop_requested() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  void record_error(const Error& e) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = e;  // the first failure is the cause; later ones are its consequences
  }

  template <class F>
  void add(F&& update) {
    std::lock_guard lock(mu_);
    update(totals_);
    totals_.seconds = seconds_since(started_);
  }

  RunTotals snapshot() {
    std::lock_guard lock(mu_);
    totals_.seconds = seconds_since(started_);
    return totals_;
  }

  SyncResult finish() {
    if (auto st = wal_->sync(); !st) record_error(st.error());
    uint64_t waiting = 0, rows_waiting = 0;
    for (const auto& info : wal_->pending()) {
      ++waiting;
      rows_waiting += info.rows;
    }
    SyncResult result;
    add([&](RunTotals& t) { t.batches_waiting = waiting; });
    result.totals = snapshot();
    const bool stopped_by_signal = options_.stop_requested && options_.stop_requested->load();
    if (error_) {
      result.exit_code = exit_code_for(error_->kind);
      result.message = error_->message;
      if (waiting > 0 && needs_a_change(error_->kind)) {
        // Waiting cannot fix a configuration or a batch the destination refuses as it is: exit 1 or 2 (which
        // systemd and serve do not restart on), still saying that nothing is lost.
        result.message = stuck_sentence(waiting, rows_waiting, error_->message);
      } else if (waiting > 0 && error_->kind != ErrorKind::kCorruption) {
        result.exit_code = exit_code::kRetryLater;
        result.message = waiting_sentence(waiting, rows_waiting, error_->message);
      }
    } else if (waiting > 0) {
      result.exit_code = exit_code::kRetryLater;
      result.message = waiting_sentence(
          waiting, rows_waiting, stopped_by_signal ? "stopped before they landed" : "they did not land in this run");
    } else if (stopped_by_signal && options_.once &&
               !(drained_ && result.totals.batches_committed == batches_cut_.load())) {
      // Stopped before the source was drained, or before everything read was committed (the committer drops what
      // it had not taken when the stop came; the position was not committed either, so it is read again).
      result.exit_code = kInterruptedExit;
      result.interrupted = true;
      result.message = fmt::format(
          "pipeline '{}' was stopped before its source was drained; everything committed has landed. Run the same "
          "command again to read the rest",
          pipe_->name);
    }
    if (result.exit_code != 0) reporter_.error(result.message);
    reporter_.sync_complete(result.totals, result.exit_code);
    save_run_stats(result.totals, result.exit_code);
    return result;
  }

  std::string waiting_sentence(uint64_t batches, uint64_t rows, const std::string& why) const {
    return fmt::format(
        "{} committed batch{} ({} rows) wait in the WAL ({}): {}. Nothing is lost: run the same "
        "command again to deliver them",
        batches, batches == 1 ? "" : "es", rows, wal_->location(), why);
  }

  static bool needs_a_change(ErrorKind kind) { return kind == ErrorKind::kConfig || kind == ErrorKind::kBadInput; }

  std::string stuck_sentence(uint64_t batches, uint64_t rows, const std::string& why) const {
    return fmt::format(
        "{} committed batch{} ({} rows) wait in the WAL ({}): {}. Nothing is lost, but a run as things are fails "
        "the same way: change what this says, then run the same command again",
        batches, batches == 1 ? "" : "es", rows, wal_->location(), why);
  }

  SyncResult finish_with(const Error& e) {
    SyncResult result;
    result.exit_code = exit_code_for(e.kind);
    result.message = e.message;
    result.totals = snapshot();
    reporter_.error(e.message);
    return result;
  }

  // The pipeline's stats = those of earlier runs + this run's so far.
  void save_run_stats(const RunTotals& t, int exit_code) {
    PipelineStats s = stats_before_;
    s.runs += 1;
    s += t;
    s.last_run_started = format_iso8601_micros(now_micros() - static_cast<int64_t>(t.seconds * 1e6));
    s.last_run_finished = exit_code >= 0 ? format_iso8601_micros(now_micros()) : std::string();
    s.last_exit_code = exit_code;
    s.last_rows_per_second = t.rows_per_second();
    if (auto st = storage_->state().save_stats(s); !st) {
      spdlog::warn("could not save statistics: {}", st.error().message);
    }
  }

  // Every few seconds while the stages run, when the counts changed: a killed run (or a daemon that runs for days)
  // keeps its counts up to the last save.
  void save_stats_if_changed() {
    const RunTotals t = snapshot();
    const std::pair now{t.rows_committed, t.rows_landed};
    if (saved_stats_ == now) return;
    save_run_stats(t, /*exit_code=*/-1);  // -1: still running (or killed)
    saved_stats_ = now;
  }

  const Config& config_;
  const Settings& settings_;
  const SyncOptions& options_;
  Reporter& reporter_;
  std::shared_ptr<PipelineMetrics> metrics_;  // scraped while the run lives (SKIPPR_METRICS_ADDRESS)
  const PipelineConfig* pipe_ = nullptr;
  std::unique_ptr<PipelineStorage> storage_;
  PipelinePaths paths_;
  PipelineState state_;
  std::unique_ptr<Source> source_;
  std::optional<SyncPasses> passes_;              // replace landings only: the syncs the read stage makes
  std::map<std::string, uint64_t> rows_by_sync_;  // the lander's: rows landed per open sync (count_replaced)
  std::unique_ptr<Sink> sink_;
  bool sink_open_ = false;
  std::unique_ptr<Wal> wal_;
  std::optional<DeadLetterFile> dead_letters_;
  BoundedQueue<ReadBatch> to_commit_{kQueueDepth};
  BoundedQueue<CommittedBatch> to_land_{kLandQueueBatches, settings_.landing_queue_limit()};
  std::atomic<bool> stopping_{false};
  std::optional<Clock::time_point> stop_seen_;
  std::mutex mu_;
  RunTotals totals_;
  PipelineStats stats_before_;
  std::optional<std::pair<uint64_t, uint64_t>> saved_stats_;  // (committed, landed) rows at the last periodic save
  std::atomic<bool> drained_{false};      // with --once: the reader saw the source drained (not stopped before it)
  std::atomic<uint64_t> batches_cut_{0};  // handed to the committer by the reader
  std::optional<Error> error_;
  Clock::time_point started_;
  // Last: released (and its renewal thread stopped) before anything its callback touches goes.
  std::unique_ptr<PipelineLease> lease_;
};

}  // namespace

Error unexpected_exception(std::string_view where, std::string_view what) {
  return {ErrorKind::kInternal,
          fmt::format("unexpected failure in the {}: {}. This is a bug in skipprd: please report it with the log; "
                      "what was committed is kept and lands at the next run",
                      where, what)};
}

SyncResult run_sync(const Config& config, const Settings& settings, const SyncOptions& options, Reporter& reporter) {
  // The stages guard their own threads; this catches what prepare() or finish() throws.
  try {
    return SyncRun(config, settings, options, reporter).run();
  } catch (const std::exception& e) {
    const Error error = unexpected_exception("run", e.what());
    reporter.error(error.message);
    return {exit_code_for(error.kind), false, error.message, {}};
  } catch (...) {
    const Error error = unexpected_exception("run", "an exception of unknown type");
    reporter.error(error.message);
    return {exit_code_for(error.kind), false, error.message, {}};
  }
}

}  // namespace skippr
