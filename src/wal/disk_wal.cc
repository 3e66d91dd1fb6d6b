// The disk WAL: commit (append + fdatasync), mark_landed (+ segment deletion), and open (recovery).
//
// Durability rules this file keeps:
// - a batch is committed once its record is fdatasync'ed; a new segment's header and directory entry are made
//   durable before the segment holds any batch, so the newest segment alone always restores the resume point;
// - the outgoing segment is synced before the next one is created, so only the newest can end in a torn record;
// - a failed fsync poisons the Wal: fsync is never retried on the same descriptor (fsyncgate);
// - group commit: committers append under the lock, then one of them (the leader) fdatasyncs outside it for every
//   record appended so far, and the others wait for that sync instead of issuing their own.
#include "wal/wal.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <optional>

#include "core/crc32c.h"
#include "core/env.h"
#include "core/failpoint.h"
#include "wal/batch_codec.h"
#include "wal/record_format.h"
#include "wal/recovery.h"
#include "wal/segment.h"
#include "wal/segment_reader.h"

namespace skippr {

namespace fs = std::filesystem;

namespace {

struct LiveSegment {
  fs::path path;
  uint64_t first_seq = 0;
  uint64_t bytes = 0;
};

std::unexpected<Error> unexpected(Error e) { return std::unexpected(std::move(e)); }

}  // namespace

// The disk store: segment files under WalOptions::dir (see wal.h for the layout).
class DiskWal final : public Wal {
 public:
  struct Impl;
  explicit DiskWal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
  ~DiskWal() override;

  using Wal::commit;
  Result<EncodedBatch> encode_parts(std::span<const Batch> parts) const override;
  Result<BatchId> commit(const EncodedBatch& batch, const Position& position_after) override;
  Status mark_landed(uint64_t seq) override;
  void stop_waiting() override;
  Status sync() override;
  std::vector<WalBatchInfo> pending() const override;
  Result<std::vector<Batch>> read_parts(const WalBatchInfo& info) const override;
  Result<EncodedBatch> read_encoded(const WalBatchInfo& info) const override;
  Position last_position() const override;
  uint64_t last_committed_seq() const override;
  uint64_t next_seq() const override;
  uint64_t landed_watermark() const override;
  uint64_t bytes_on_disk() const override;
  std::string location() const override;

 private:
  std::unique_ptr<Impl> impl_;
};

struct DiskWal::Impl {
  Impl(const WalOptions& o, Env& e) : options(o), env(e) {}

  WalOptions options;
  Env& env;

  mutable std::mutex mu;
  std::condition_variable sync_done;  // a leader's sync finished (or failed)
  std::condition_variable landed;     // mark_landed moved the watermark, or stop_waiting() was called
  bool stop_waiting = false;
  std::optional<Error> poison;            // set once by a durability failure; every later call returns it
  std::deque<LiveSegment> segments;       // on disk, oldest first; the last one is `current`
  std::deque<WalBatchInfo> unlanded;      // committed, seq > watermark, in order
  std::unique_ptr<WritableFile> current;  // the newest segment, open for appending
  // Group commit tickets: every record appended to `current` takes the next one; `durable` is the highest ticket
  // known to be fdatasync'ed. At most one sync runs at a time (`sync_running`), outside the lock.
  uint64_t appended = 0;
  uint64_t durable = 0;
  bool sync_running = false;
  uint64_t next_seq = 1;
  uint64_t watermark = 0;
  Position last_position;
  // The newest segment belongs to another lineage (written before lineages existed): the next commit starts a new
  // segment, so every segment holds batches of one lineage only (its header names it).
  bool roll_before_commit = false;

  Status check_poison() const {
    if (poison) return unexpected(*poison);
    return ok();
  }

  std::unexpected<Error> poison_with(Error error) {
    error.kind = ErrorKind::kFatalIo;
    poison = error;
    spdlog::error("WAL in {} stopped: {}", options.dir.string(), error.message);
    return unexpected(std::move(error));
  }

  // Returns once the record holding `ticket` is durable. The first waiter to find no sync running becomes the
  // leader and syncs, without the lock, everything appended so far; the others wait for it. A failed sync poisons
  // the WAL for every waiter: nobody retries it.
  Status wait_durable(std::unique_lock<std::mutex>& lock, uint64_t ticket) {
    while (durable < ticket) {
      SKIPPR_TRY(check_poison());
      if (sync_running) {
        sync_done.wait(lock);
        continue;
      }
      failpoint::hit(failpoint::kWalBeforeFsync);  // before sync_running is set: a handler may throw
      sync_running = true;
      const uint64_t target = appended;
      WritableFile* file = current.get();  // stays open: a segment roll waits for sync_running to clear
      lock.unlock();
      auto synced = file->sync();
      lock.lock();
      sync_running = false;
      if (synced) durable = std::max(durable, target);
      sync_done.notify_all();
      if (!synced) return poison_with(synced.error());
    }
    return check_poison();
  }

  // Waits out a running group sync, so the caller may sync or replace `current` while it holds the lock.
  void wait_for_no_sync(std::unique_lock<std::mutex>& lock) {
    sync_done.wait(lock, [&] { return !sync_running; });
  }

  // Makes everything appended to the current segment durable, holding the lock (no sync may be running).
  Status sync_now_locked() {
    if (!current || durable >= appended) return ok();
    auto synced = current->sync();
    if (!synced) return poison_with(synced.error());
    durable = appended;
    return ok();
  }

  // Appends one framed record. On failure the file is cut back to where the record began, so a later append does
  // not land behind a half-written record (which recovery would have to call corruption).
  // The record may come in two pieces (frame + metadata, then the compressed columns) so the large part is not copied.
  Status append_record_locked(std::string_view record, std::string_view tail = {}) {
    const uint64_t start = current->size();
    auto appended = current->append(record);
    if (appended && !tail.empty()) appended = current->append(tail);
    if (appended) {
      ++this->appended;
      segments.back().bytes = current->size();
      return ok();
    }
    Error error = appended.error();
    auto cut = current->truncate(start);
    if (!cut)
      return poison_with(
          Error{ErrorKind::kFatalIo, fmt::format("{}; then cutting {} back to {} bytes failed: {}", error.message,
                                                 current->path().string(), start, cut.error().message)});
    if (error.kind == ErrorKind::kDiskFull) return unexpected(std::move(error));
    return poison_with(std::move(error));  // EIO and the like: the device is not to be trusted any more
  }

  // Creates the segment for `next_seq` and makes its header and its directory entry durable before any batch goes
  // in. The outgoing segment is synced first: it may end in unsynced LANDED records.
  Status start_segment_locked() {
    SKIPPR_TRY(sync_now_locked());
    const fs::path path = options.dir / wal::segment_file_name(next_seq);
    auto file_or = env.open_writable(path, OpenMode::kCreateExclusive);
    if (!file_or) return unexpected(file_or.error());
    std::unique_ptr<WritableFile> file = std::move(*file_or);
    const std::string header = wal::encode_record(
        wal::RecordType::kSegmentHeader,
        wal::encode_segment_header({options.epoch, next_seq, watermark, last_position, options.lineage}));
    if (auto written = file->append(header); !written) {
      (void)file->close();
      // An empty or partial newest segment would be repaired at the next open, but one left behind a later
      // segment would not, so it must go now.
      if (auto removed = env.unlink(path); !removed) return poison_with(removed.error());
      return unexpected(written.error());
    }
    if (auto synced = file->sync(); !synced) return poison_with(synced.error());
    if (auto dir_synced = env.fsync_dir(options.dir); !dir_synced) return poison_with(dir_synced.error());
    if (current) {
      if (auto closed = current->close(); !closed) return poison_with(closed.error());
    }
    current = std::move(file);
    durable = appended;  // the new segment's only record, its header, is synced
    segments.push_back({path, next_seq, current->size()});
    roll_before_commit = false;
    return ok();
  }

  // Deletes, oldest first, every segment but the newest whose batches have all landed.
  Status delete_landed_segments_locked() {
    bool deleted = false;
    while (segments.size() > 1 && segments[1].first_seq - 1 <= watermark) {
      failpoint::hit(failpoint::kWalSegmentDelete);
      SKIPPR_TRY(env.unlink(segments.front().path));
      segments.pop_front();
      deleted = true;
    }
    if (!deleted) return ok();
    // Not needed for safety (a resurrected segment holds only landed batches), but it keeps the seq ranges of
    // the segments contiguous after a power cut.
    if (auto synced = env.fsync_dir(options.dir); !synced) return poison_with(synced.error());
    return ok();
  }
};

DiskWal::~DiskWal() {
  std::unique_lock lock(impl_->mu);
  impl_->wait_for_no_sync(lock);
  if (impl_->poison || !impl_->current) return;
  // Best effort: what is unsynced here are LANDED records, whose loss only means an idempotent re-write.
  if (auto synced = impl_->sync_now_locked(); !synced)
    spdlog::warn("WAL sync at close failed: {}", synced.error().message);
  if (auto closed = impl_->current->close(); !closed) spdlog::warn("WAL close failed: {}", closed.error().message);
}

Result<std::unique_ptr<Wal>> Wal::open(const WalOptions& options) {
  Env& env = options.env != nullptr ? *options.env : default_env();
  const std::string pipeline = options.pipeline.empty() ? wal::pipeline_name_from_dir(options.dir) : options.pipeline;
  SKIPPR_TRY(env.create_dirs(options.dir));
  auto scanned = wal::scan_wal(env, options.dir, options.epoch, std::string_view(options.lineage), pipeline);
  if (!scanned) return unexpected(scanned.error());
  wal::WalScan& scan = *scanned;

  if (scan.newest_is_empty()) {
    // Created but never given a complete header: the crash came before it could hold a batch.
    const fs::path path = scan.segments.back().path;
    spdlog::warn("WAL: removing {}, a segment left empty by a crash while it was being created", path.string());
    SKIPPR_TRY(env.unlink(path));
    SKIPPR_TRY(env.fsync_dir(options.dir));
    scan.segments.pop_back();
  } else if (scan.newest() != nullptr && scan.newest()->torn_tail) {
    const wal::SegmentScan& newest = *scan.newest();
    spdlog::warn(
        "WAL: {} ends in a record cut short by a crash (torn write); truncating it from {} to {} bytes. "
        "Nothing committed is lost: that record was never acknowledged",
        newest.path.string(), newest.file_bytes, newest.valid_bytes);
    auto file = env.open_writable(newest.path, OpenMode::kAppendExisting);
    if (!file) return unexpected(file.error());
    SKIPPR_TRY((*file)->truncate(newest.valid_bytes));
    SKIPPR_TRY((*file)->sync());
    SKIPPR_TRY((*file)->close());
  }

  auto impl = std::make_unique<DiskWal::Impl>(options, env);
  impl->options.env = &env;
  impl->watermark = scan.segments.empty() ? options.first_seq - 1 : scan.landed_watermark;
  impl->next_seq = scan.segments.empty() ? options.first_seq : scan.last_committed_seq + 1;
  impl->last_position = scan.segments.empty() ? options.initial_position : scan.last_position;
  impl->roll_before_commit = !scan.segments.empty() && scan.lineage != options.lineage;
  for (const wal::SegmentScan& segment : scan.segments) {
    impl->segments.push_back({segment.path, segment.header->first_seq, segment.valid_bytes});
    for (const WalBatchInfo& batch : segment.batches) {
      if (batch.seq > impl->watermark) impl->unlanded.push_back(batch);
    }
  }
  if (!impl->segments.empty()) {
    auto file = env.open_writable(impl->segments.back().path, OpenMode::kAppendExisting);
    if (!file) return unexpected(file.error());
    impl->current = std::move(*file);
  } else if (options.write_header_at_open) {
    std::lock_guard lock(impl->mu);
    SKIPPR_TRY(impl->start_segment_locked());
  }
  return std::unique_ptr<Wal>(new DiskWal(std::move(impl)));
}

Result<WalInspection> Wal::inspect(const fs::path& dir, Env* env_or_null) {
  Env& env = env_or_null != nullptr ? *env_or_null : default_env();
  WalInspection out;
  auto present = env.exists(dir);
  if (!present) return unexpected(present.error());
  if (!*present) return out;
  auto scanned = wal::scan_wal(env, dir, std::nullopt, std::nullopt, wal::pipeline_name_from_dir(dir));
  if (!scanned) return unexpected(scanned.error());
  for (const wal::SegmentScan& segment : scanned->segments) {
    out.segments.push_back({segment.path.filename().string(), segment.header ? segment.header->first_seq : 0,
                            segment.file_bytes, segment.batches.size()});
    out.batches.insert(out.batches.end(), segment.batches.begin(), segment.batches.end());
    out.bytes += segment.file_bytes;
  }
  out.landed_watermark = scanned->landed_watermark;
  out.last_committed_seq = scanned->last_committed_seq;
  out.last_position = scanned->last_position;
  out.epoch = scanned->epoch;
  out.lineage = scanned->lineage;
  out.torn_tail = scanned->newest() != nullptr && scanned->newest()->torn_tail;
  return out;
}

Result<std::optional<uint64_t>> Wal::epoch_on_disk(const fs::path& dir, Env* env_or_null) {
  Env& env = env_or_null != nullptr ? *env_or_null : default_env();
  auto present = env.exists(dir);
  if (!present) return unexpected(present.error());
  if (!*present) return std::optional<uint64_t>();
  auto names = env.list_dir(dir);
  if (!names) return unexpected(names.error());
  std::optional<std::string> oldest;
  for (const std::string& name : *names) {
    if (wal::parse_segment_file_name(name) && (!oldest || name < *oldest)) oldest = name;
  }
  if (!oldest) return std::optional<uint64_t>();
  const fs::path path = dir / *oldest;
  auto size = env.file_size(path);
  if (!size) return unexpected(size.error());
  wal::SegmentReader reader(env, path, *size);
  wal::FramedRecord record;
  auto status = reader.read(0, record);
  if (!status) return unexpected(status.error());
  if (*status != wal::DecodeStatus::kOk || record.type != static_cast<uint8_t>(wal::RecordType::kSegmentHeader)) {
    return std::optional<uint64_t>();  // a half-created segment; Wal::open repairs or reports it
  }
  auto header = wal::decode_segment_header(record.payload_front);
  if (!header) return std::optional<uint64_t>();
  return std::optional<uint64_t>(header->epoch);
}

Status Wal::destroy(const fs::path& dir, Env* env_or_null) {
  Env& env = env_or_null != nullptr ? *env_or_null : default_env();
  auto present = env.exists(dir);
  if (!present) return unexpected(present.error());
  if (!*present) return ok();
  auto names = env.list_dir(dir);
  if (!names) return unexpected(names.error());
  std::sort(names->begin(), names->end());  // segment names sort in seq order
  for (const std::string& name : *names) SKIPPR_TRY(env.unlink(dir / name));
  SKIPPR_TRY(env.remove_dir(dir));
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  if (auto synced = env.fsync_dir(parent); !synced) return unexpected(synced.error());
  return ok();
}

Result<EncodedBatch> encode_for_wal(std::span<const Batch> parts, int zstd_level) {
  auto columns = wal::encode_parts_blocks(parts, zstd_level);
  if (!columns) return unexpected(columns.error());
  const uint32_t crc = crc32c::value(*columns);
  uint64_t rows = 0;
  for (const Batch& part : parts) rows += part.rows;
  return EncodedBatch{rows, std::move(*columns), crc};
}

Result<std::vector<Batch>> decode_wal_parts(uint8_t record_type, std::string_view columns) {
  return record_type == static_cast<uint8_t>(wal::RecordType::kBatchBlocks) ? wal::decode_parts_blocks(columns)
                                                                            : wal::decompress_parts(columns);
}

Result<EncodedBatch> DiskWal::encode_parts(std::span<const Batch> parts) const {
  return encode_for_wal(parts, impl_->options.zstd_level);
}

Result<Batch> Wal::read_batch(const WalBatchInfo& info) const {
  auto parts = read_parts(info);
  if (!parts) return unexpected(parts.error());
  if (parts->size() != 1 || !parts->front().stream.empty()) {
    return fail(ErrorKind::kInternal,
                fmt::format("batch {} holds {} streams where one batch was expected", info.seq, parts->size()));
  }
  return std::move(parts->front());
}

Result<EncodedBatch> Wal::read_encoded(const WalBatchInfo& info) const {
  auto parts = read_parts(info);
  if (!parts) return unexpected(parts.error());
  return encode_parts(*parts);
}

Result<BatchId> Wal::commit(const Batch& batch, const Position& position_after) {
  auto encoded = encode(batch);
  if (!encoded) return unexpected(encoded.error());
  return commit(*encoded, position_after);
}

Result<BatchId> DiskWal::commit(const EncodedBatch& batch, const Position& position_after) {
  const std::string& columns = batch.columns;
  std::unique_lock lock(impl_->mu);
  Impl& s = *impl_;
  SKIPPR_TRY(s.check_poison());
  auto needs_new_segment = [&] {
    return !s.current || s.current->size() >= s.options.bytes_per_file || s.roll_before_commit;
  };
  if (needs_new_segment()) {
    s.wait_for_no_sync(lock);  // the outgoing segment is synced and closed here, never under a running sync
    SKIPPR_TRY(s.check_poison());
    if (needs_new_segment()) SKIPPR_TRY(s.start_segment_locked());
  }

  const uint64_t seq = s.next_seq;
  BatchId id{s.options.pipeline, s.options.epoch, seq, s.options.lineage};
  const std::string meta = wal::encode_batch_meta({seq, id, position_after, batch.rows});
  if (meta.size() + columns.size() > std::numeric_limits<uint32_t>::max()) {
    return fail(ErrorKind::kBadInput, fmt::format("a batch of {} encoded bytes does not fit in one WAL record; "
                                                  "lower BUFFER_THRESHOLD_BYTES",
                                                  columns.size()));
  }
  // No per-byte work on the columns here: their checksum was taken by encode() and is only joined to the metadata's.
  const std::string front =
      wal::encode_record_front(wal::RecordType::kBatchBlocks, meta, columns.size(), batch.columns_crc);
  uint64_t offset = s.current->size();
  auto appended = s.append_record_locked(front, columns);
  if (!appended && appended.error().kind == ErrorKind::kDiskFull) {
    // The newest segment is never deleted while it is the newest, so on a disk the WAL itself filled, a segment
    // whose batches all landed would block every later commit (and every rerun) forever. Wait until what is in it
    // has landed, move to a new segment, let the old one go, and try once more.
    const bool segment_has_batches = s.next_seq > s.segments.back().first_seq;
    if (segment_has_batches && s.options.wait_for_landing_when_full) {
      s.landed.wait(lock, [&] { return s.poison || s.stop_waiting || s.watermark + 1 >= s.next_seq; });
    }
    SKIPPR_TRY(s.check_poison());
    // Another committer may have taken this seq while the lock was released: then this record is stale.
    if (s.next_seq != seq) return unexpected(appended.error());
    if (segment_has_batches && s.watermark + 1 >= s.next_seq) {
      s.wait_for_no_sync(lock);
      SKIPPR_TRY(s.check_poison());
      spdlog::warn("WAL: the disk is full; {} holds only landed batches, so it is replaced by a new segment",
                   s.segments.back().path.string());
      SKIPPR_TRY(s.start_segment_locked());
      SKIPPR_TRY(s.delete_landed_segments_locked());
      offset = s.current->size();
      appended = s.append_record_locked(front, columns);
    }
  }
  SKIPPR_TRY(appended);
  const uint64_t ticket = s.appended;

  // The seq is taken now so the next committer appends behind this record; the batch is committed (and visible to
  // pending()) only once its sync succeeded. A failed sync poisons the WAL, so no later batch can commit either.
  s.next_seq = seq + 1;
  SKIPPR_TRY(s.wait_durable(lock, ticket));
  failpoint::hit(failpoint::kWalAfterFsync);

  uint32_t crc = 0;  // the record header's checksum, read back rather than recomputed over the whole record
  for (int i = 3; i >= 0; --i) crc = (crc << 8) | static_cast<uint8_t>(front[4 + static_cast<size_t>(i)]);
  WalBatchInfo info{.seq = seq,
                    .id = id,
                    .position_after = position_after,
                    .rows = batch.rows,
                    .segment = std::string(),
                    .offset = offset,
                    .record_bytes = front.size() + columns.size(),
                    .crc = crc,
                    .landed = false};
  for (auto it = s.segments.rbegin(); it != s.segments.rend(); ++it) {  // the segment it went into (may have rolled)
    if (it->first_seq <= seq) {
      info.segment = it->path.string();
      break;
    }
  }
  // Committers of one group may return out of order; keep `unlanded` and the resume point in seq order.
  auto pos = std::find_if(s.unlanded.begin(), s.unlanded.end(), [&](const WalBatchInfo& b) { return b.seq > seq; });
  s.unlanded.insert(pos, std::move(info));
  if (s.unlanded.back().seq == seq) s.last_position = position_after;
  return id;
}

Status DiskWal::mark_landed(uint64_t seq) {
  std::lock_guard lock(impl_->mu);
  Impl& s = *impl_;
  SKIPPR_TRY(s.check_poison());
  if (seq >= s.next_seq) {
    return fail(ErrorKind::kInternal,
                fmt::format("mark_landed({}) but the last committed batch is {}", seq, s.next_seq - 1));
  }
  if (seq <= s.watermark) return ok();  // already known; batches land in order
  auto recorded = s.append_record_locked(wal::encode_record(wal::RecordType::kLanded, wal::encode_landed(seq)));
  if (!recorded && recorded.error().kind != ErrorKind::kDiskFull) return recorded;
  // A LANDED record that does not fit on a full disk is only a lost mark (the batch would be re-written, which its
  // sink recognises): the watermark still moves, so a full segment can be replaced, and its successor's header
  // records it.
  if (!recorded) spdlog::warn("WAL: the disk is full; the landed mark of batch {} is kept in memory", seq);
  s.watermark = seq;
  s.landed.notify_all();
  while (!s.unlanded.empty() && s.unlanded.front().seq <= seq) s.unlanded.pop_front();
  return s.delete_landed_segments_locked();
}

void DiskWal::stop_waiting() {
  std::lock_guard lock(impl_->mu);
  impl_->stop_waiting = true;
  impl_->landed.notify_all();
}

Status DiskWal::sync() {
  std::unique_lock lock(impl_->mu);
  impl_->wait_for_no_sync(lock);
  SKIPPR_TRY(impl_->check_poison());
  return impl_->sync_now_locked();
}

std::vector<WalBatchInfo> DiskWal::pending() const {
  std::lock_guard lock(impl_->mu);
  return {impl_->unlanded.begin(), impl_->unlanded.end()};
}

// The record of `info`, checksum verified; `columns` points into `data`.
static Result<wal::BatchMeta> read_batch_record(const DiskWal::Impl& impl, const WalBatchInfo& info, std::string& data,
                                                std::string_view& columns, wal::RecordType& type) {
  {
    std::lock_guard lock(impl.mu);
    SKIPPR_TRY(impl.check_poison());
  }
  const std::string& pipeline = impl.options.pipeline;
  auto corrupt = [&](std::string_view what) {
    return unexpected(wal::corruption_error(info.segment, info.offset, what, pipeline));
  };
  auto read = impl.env.read_range(info.segment, info.offset, info.record_bytes);
  if (!read) return unexpected(read.error());
  data = std::move(*read);
  wal::Record record{};
  const wal::DecodeStatus status = wal::decode_record(data, 0, record);
  if (status != wal::DecodeStatus::kOk || record.total_bytes != info.record_bytes) {
    return corrupt(status == wal::DecodeStatus::kIncomplete ? "the batch record is cut short" : "checksum mismatch");
  }
  if (!wal::is_batch_record(record.type) || record.crc != info.crc) {
    return corrupt("the record is not the batch that was committed there");
  }
  auto meta = wal::decode_batch_meta(record.payload, &columns);
  if (!meta || meta->seq != info.seq) return corrupt("the record is not the batch that was committed there");
  type = record.type;
  return *meta;
}

Result<std::vector<Batch>> DiskWal::read_parts(const WalBatchInfo& info) const {
  std::string data;
  std::string_view columns;
  wal::RecordType type{};
  auto meta = read_batch_record(*impl_, info, data, columns, type);
  if (!meta) return unexpected(meta.error());
  auto parts = decode_wal_parts(static_cast<uint8_t>(type), columns);
  if (!parts)
    return unexpected(wal::corruption_error(info.segment, info.offset, parts.error().message, impl_->options.pipeline));
  return parts;
}

Result<EncodedBatch> DiskWal::read_encoded(const WalBatchInfo& info) const {
  std::string data;
  std::string_view columns;
  wal::RecordType type{};
  auto meta = read_batch_record(*impl_, info, data, columns, type);
  if (!meta) return unexpected(meta.error());
  if (type != wal::RecordType::kBatchBlocks) return Wal::read_encoded(info);  // the older one-frame encoding
  return EncodedBatch{meta->rows, std::string(columns), crc32c::value(columns)};
}

Position DiskWal::last_position() const {
  std::lock_guard lock(impl_->mu);
  return impl_->last_position;
}

uint64_t DiskWal::last_committed_seq() const {
  std::lock_guard lock(impl_->mu);
  return impl_->next_seq - 1;
}

uint64_t DiskWal::next_seq() const {
  std::lock_guard lock(impl_->mu);
  return impl_->next_seq;
}

uint64_t DiskWal::landed_watermark() const {
  std::lock_guard lock(impl_->mu);
  return impl_->watermark;
}

std::string DiskWal::location() const { return impl_->options.dir.string(); }

uint64_t DiskWal::bytes_on_disk() const {
  std::lock_guard lock(impl_->mu);
  uint64_t total = 0;
  for (const auto& segment : impl_->segments) total += segment.bytes;
  return total;
}

}  // namespace skippr
