// The write-ahead log of one pipeline: the place where a batch becomes committed. See DESIGN.md for the protocol.
//
// Layout: DATA_DIR/pipelines/<name>/wal/<first-seq, 20 digits>.wal, each a sequence of records
//   [u32 length][u32 crc32c(type + payload)][u8 type][payload]   (little-endian; length = payload bytes)
// Record types: SEGMENT_HEADER (first record of every segment: epoch, first seq, landed watermark and the position
// at the segment's start, so a segment alone restores the resume point), BATCH (seq, BatchId, position_after,
// row count, then the columns: BATCH_BLOCKS stores them in blocks, each raw or zstd, see wal/batch_codec.h; the older
// BATCH type, one zstd frame, is still read), LANDED (watermark: every seq <= it has landed; batches land in order).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

class Env;

struct WalOptions {
  std::filesystem::path dir;  // DATA_DIR/pipelines/<name>/wal
  std::string pipeline;
  uint64_t epoch = 0;
  std::string lineage;                    // of the pipeline's state; every batch committed from now on carries it
  Position initial_position;              // the resume point of a WAL that holds no segment yet (see PipelineState)
  uint64_t bytes_per_file = 64ull << 20;  // roll to a new segment once the current one reaches this size
  int zstd_level = 1;
  // A commit that meets a full disk waits for the newest segment's batches to land (another thread lands them)
  // before it replaces that segment; without it, only a segment already fully landed is replaced.
  bool wait_for_landing_when_full = false;
  Env* env = nullptr;  // the I/O seam (tests inject faults through it); nullptr = default_env()
};

// A batch's columns encoded for the WAL (serialised, compressed where that pays), made by Wal::encode ahead of the
// commit so the committer only appends and syncs, and the encoding of the next batch overlaps this one's fdatasync.
struct EncodedBatch {
  uint64_t rows = 0;
  std::string columns;
  uint32_t columns_crc = 0;  // crc32c of `columns`, so commit() checksums only the small metadata in front of them
};

struct WalBatchInfo {
  uint64_t seq = 0;
  BatchId id;
  Position position_after;
  uint64_t rows = 0;
  std::filesystem::path segment;
  uint64_t offset = 0;        // of the record header in the segment
  uint64_t record_bytes = 0;  // header + payload
  uint32_t crc = 0;
  bool landed = false;
};

struct WalSegmentInfo {
  std::filesystem::path path;
  uint64_t first_seq = 0;
  uint64_t bytes = 0;
  uint64_t batches = 0;
};

// What is on disk, read without changing anything (for SHOW PIPELINE and `wal inspect` while a sync runs).
struct WalInspection {
  std::vector<WalSegmentInfo> segments;
  std::vector<WalBatchInfo> batches;  // every batch still on disk, in seq order
  uint64_t landed_watermark = 0;      // every seq <= this has landed
  uint64_t last_committed_seq = 0;    // 0 = none
  Position last_position;             // resume point; empty = from the start
  uint64_t epoch = 0;
  std::string lineage;  // of the newest segment (empty: written before lineages)
  uint64_t bytes = 0;
  bool torn_tail = false;  // the newest segment ends in an incomplete record (a sync would truncate it)
};

class Wal {
 public:
  // Opens the WAL in `options.dir`, creating it if absent, and recovers it: a record that fails its checksum or is
  // cut short at the tail of the newest segment is a torn write and is truncated; damage anywhere else is
  // kCorruption with a message naming the file and the byte offset. Checksums every record of the newest segment
  // (the only one a crash can tear); of older ones it reads record headers, small records and the metadata at the
  // front of each batch, never the columns, so start-up does not grow with the WAL (read_batch checks those).
  static Result<std::unique_ptr<Wal>> open(const WalOptions& options);

  // Read-only scan; the same checks as open() but truncates nothing (a torn tail is reported, not an error).
  static Result<WalInspection> inspect(const std::filesystem::path& dir, Env* env = nullptr);

  // The epoch the WAL in `dir` belongs to, from the header of its oldest segment alone (cheap at any WAL size);
  // nullopt when there is no WAL or no complete header yet.
  static Result<std::optional<uint64_t>> epoch_on_disk(const std::filesystem::path& dir, Env* env = nullptr);

  // Deletes the WAL directory (RESET PIPELINE): its segments oldest first, so a power cut half-way leaves a valid,
  // shorter WAL of the old epoch (which the next sync finishes deleting), then the directory, then fsyncs the
  // parent. Absent = nothing to do. Must not run while a Wal is open on `dir`.
  static Status destroy(const std::filesystem::path& dir, Env* env = nullptr);

  ~Wal();
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Encodes a batch for commit(). Pure CPU work touching no WAL state: call it from any thread, e.g. the stage
  // before the committer. kInternal when the batch's columns do not match its row count.
  Result<EncodedBatch> encode(const Batch& batch) const;

  // Appends a BATCH record and makes it durable (fdatasync; directory fsync when a new segment was created).
  // When this returns, the batch is committed. Thread-safe; concurrent committers share one fdatasync (group commit).
  // An fsync failure is kFatalIo and poisons the WAL: every later call fails (never retry fsync on the same
  // descriptor). ENOSPC is kDiskFull, after one more try when the newest segment's batches had all landed (or landed
  // meanwhile): it is then replaced by a new segment and deleted, so a WAL that filled its disk recovers. Calls
  // failpoint::hit(kWalBeforeFsync) and (kWalAfterFsync) around the sync.
  Result<BatchId> commit(const EncodedBatch& batch, const Position& position_after);
  // encode() then commit(), for callers with nothing to overlap the encoding with.
  Result<BatchId> commit(const Batch& batch, const Position& position_after);

  // Records that every batch up to and including `seq` has landed (a LANDED record; made durable by the next
  // commit or by sync(), which is enough: a lost mark only means an idempotent re-write). Then deletes every segment,
  // other than the newest, whose batches have all landed (failpoint kWalSegmentDelete before each unlink).
  Status mark_landed(uint64_t seq);

  // A commit that meets a full disk waits for the batches of the newest segment to land, then replaces that segment
  // and tries again (see commit). This ends such waits (the landing stage stopped): the commit returns kDiskFull.
  void stop_waiting();

  // Makes everything written so far durable (used at clean shutdown).
  Status sync();

  // Committed batches that have not landed, in seq order.
  std::vector<WalBatchInfo> pending() const;
  // Reads and decompresses one batch; verifies its checksum again.
  Result<Batch> read_batch(const WalBatchInfo& info) const;

  Position last_position() const;  // position_after of the last committed batch (or of the segment header)
  uint64_t last_committed_seq() const;
  // The seq the next commit() will get (last_committed_seq() + 1); stable while the caller is the only committer.
  uint64_t next_seq() const;
  uint64_t landed_watermark() const;
  uint64_t bytes_on_disk() const;

 private:
  struct Impl;
  explicit Wal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skippr
