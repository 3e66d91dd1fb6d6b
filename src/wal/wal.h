// The write-ahead log of one pipeline: the place where a batch becomes committed. See docs/design/commit-protocol.md
// for the protocol and docs/design/wal-format.md for the bytes.
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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

class Env;

struct WalOptions {
  std::filesystem::path dir;  // DATA_DIR/pipelines/<name>/wal
  std::string pipeline;
  uint64_t epoch = 0;
  std::string lineage;        // of the pipeline's state; every batch committed from now on carries it
  Position initial_position;  // the resume point of a WAL that holds no segment yet (see PipelineState)
  // The seq the first batch of a WAL that holds no segment yet gets; everything before it counts as landed. Above 1
  // only for a replica's copy started again part-way (wal/clustered/clustered_wal.h), whose batches keep the primary's
  // seqs.
  uint64_t first_seq = 1;
  // An empty WAL writes its first segment's header (epoch, lineage, first_seq, initial_position) at once rather than
  // with the first batch, so that where it starts is durable even before it holds a batch (a replica's copy).
  bool write_header_at_open = false;
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

// A commit's parts (one Batch per stream) in WAL blocks (wal/batch_codec.h) with their checksum: what every store's
// encode_parts() returns.
Result<EncodedBatch> encode_for_wal(std::span<const Batch> parts, int zstd_level);
// Decodes what encode_for_wal made, in a record of `type`; both older encodings of one batch read as one part.
Result<std::vector<Batch>> decode_wal_parts(uint8_t record_type, std::string_view columns);

struct WalBatchInfo {
  uint64_t seq = 0;
  BatchId id;
  Position position_after;
  uint64_t rows = 0;
  std::string segment;        // opaque to everything outside wal/: a segment file's path, or an object's key
  uint64_t offset = 0;        // of the record header in the segment
  uint64_t record_bytes = 0;  // header + payload
  uint32_t crc = 0;
  bool landed = false;
};

struct WalSegmentInfo {
  std::string name;  // a segment file's name, or an object's key
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

// The WAL of one pipeline, whatever stores it: `disk` (segment files in DATA_DIR, Wal::open) or `s3` (one object per
// batch, S3Wal in wal/s3_wal.h). The engine sees only this interface; framing and checksums are shared by both
// (wal/record_format.h, wal/segment.h), group commit and fsync poisoning belong to the disk store.
class Wal {
 public:
  // The disk WAL in `options.dir`, created if absent, and recovered: a record that fails its checksum or is cut
  // short at the tail of the newest segment is a torn write and is truncated; damage anywhere else is kCorruption
  // with a message naming the file and the byte offset. Checksums every record of the newest segment (the only one a
  // crash can tear); of older ones it reads record headers, small records and the metadata at the front of each
  // batch, never the columns, so start-up does not grow with the WAL (read_batch checks those).
  static Result<std::unique_ptr<Wal>> open(const WalOptions& options);

  // Read-only scan of a disk WAL; the same checks as open() but truncates nothing (a torn tail is reported).
  static Result<WalInspection> inspect(const std::filesystem::path& dir, Env* env = nullptr);

  // The epoch the disk WAL in `dir` belongs to, from the header of its oldest segment alone (cheap at any WAL size);
  // nullopt when there is no WAL or no complete header yet.
  static Result<std::optional<uint64_t>> epoch_on_disk(const std::filesystem::path& dir, Env* env = nullptr);

  // Deletes the disk WAL directory (RESET PIPELINE): its segments oldest first, so a power cut half-way leaves a
  // valid, shorter WAL of the old epoch (which the next sync finishes deleting), then the directory, then fsyncs the
  // parent. Absent = nothing to do. Must not run while a Wal is open on `dir`.
  static Status destroy(const std::filesystem::path& dir, Env* env = nullptr);

  virtual ~Wal() = default;

  // Encodes a commit's parts (one Batch per stream that had records) for commit(). Pure CPU work touching no WAL
  // state: call it from any thread, e.g. the stage before the committer. kInternal when a part's columns do not
  // match its row count.
  virtual Result<EncodedBatch> encode_parts(std::span<const Batch> parts) const = 0;
  Result<EncodedBatch> encode(const Batch& batch) const { return encode_parts(std::span(&batch, 1)); }

  // Makes the batch durable; when this returns, it is committed. Thread-safe. On disk: appends a BATCH record and
  // fdatasyncs it (concurrent committers share one fdatasync); a failed fsync is kFatalIo and poisons the WAL, ENOSPC
  // is kDiskFull after one more try when the newest segment's batches had all landed (it is then replaced). Calls
  // failpoint::hit(kWalBeforeFsync) and (kWalAfterFsync) around the step that makes the commit durable.
  virtual Result<BatchId> commit(const EncodedBatch& batch, const Position& position_after) = 0;
  // encode() then commit(), for callers with nothing to overlap the encoding with.
  Result<BatchId> commit(const Batch& batch, const Position& position_after);

  // Records that every batch up to and including `seq` has landed (durable by the next commit or sync(), which is
  // enough: a lost mark only means an idempotent re-write), then frees what only landed batches used (failpoint
  // kWalSegmentDelete before each deletion).
  virtual Status mark_landed(uint64_t seq) = 0;

  // A commit that meets a full disk waits for the batches of the newest segment to land, then replaces that segment
  // and tries again (see commit). This ends such waits (the landing stage stopped): the commit returns kDiskFull.
  virtual void stop_waiting() {}

  // Makes everything written so far durable (used at clean shutdown).
  virtual Status sync() = 0;

  // Committed batches that have not landed, in seq order.
  virtual std::vector<WalBatchInfo> pending() const = 0;
  // Reads and decompresses one committed batch's parts (one per stream); verifies its checksum again.
  virtual Result<std::vector<Batch>> read_parts(const WalBatchInfo& info) const = 0;
  // The same for a batch of one unnamed stream (kCorruption for any other).
  Result<Batch> read_batch(const WalBatchInfo& info) const;
  // One batch's columns as they are stored, checksum verified, for a copy that must hold the very same record (a
  // replica's catch-up). By default read_batch() encoded again.
  virtual Result<EncodedBatch> read_encoded(const WalBatchInfo& info) const;

  virtual Position last_position() const = 0;  // position_after of the last committed batch
  virtual uint64_t last_committed_seq() const = 0;
  // The seq the next commit() will get (last_committed_seq() + 1); stable while the caller is the only committer.
  virtual uint64_t next_seq() const = 0;
  virtual uint64_t landed_watermark() const = 0;
  virtual uint64_t bytes_on_disk() const = 0;  // of batches still held (disk: segment bytes; s3: object bytes)
  // Where it is, for messages: a folder, or s3://bucket/prefix/.
  virtual std::string location() const = 0;
};

}  // namespace skippr
