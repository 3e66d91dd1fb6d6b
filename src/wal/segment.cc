#include "wal/segment.h"

#include <fmt/format.h>

#include <charconv>

#include "core/reset_advice.h"
#include "wal/byte_io.h"
#include "wal/record_format.h"
#include "wal/segment_reader.h"

namespace skippr::wal {

namespace fs = std::filesystem;

namespace {
// Version 2 adds the lineage after the position; version 1 (no lineage) is still read.
constexpr uint32_t kSegmentFormatVersion = 2;
constexpr std::string_view kSuffix = ".wal";
constexpr size_t kSeqDigits = 20;
}  // namespace

std::string segment_file_name(uint64_t first_seq) { return fmt::format("{:020}{}", first_seq, kSuffix); }

std::optional<uint64_t> parse_segment_file_name(std::string_view name) {
  if (name.size() != kSeqDigits + kSuffix.size() || !name.ends_with(kSuffix)) return std::nullopt;
  uint64_t seq = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + kSeqDigits, seq);
  if (ec != std::errc() || end != name.data() + kSeqDigits) return std::nullopt;
  return seq;
}

std::string encode_segment_header(const SegmentHeader& header) {
  std::string out;
  ByteWriter w(out);
  w.u32(kSegmentFormatVersion);
  w.u64(header.epoch);
  w.u64(header.first_seq);
  w.u64(header.landed_watermark);
  w.str(header.position.token);
  w.str(header.lineage);
  return out;
}

std::optional<SegmentHeader> decode_segment_header(std::string_view payload) {
  ByteReader r(payload);
  auto version = r.u32();
  if (!version || *version < 1 || *version > kSegmentFormatVersion) return std::nullopt;
  auto epoch = r.u64();
  auto first_seq = r.u64();
  auto watermark = r.u64();
  auto position = r.str();
  if (!epoch || !first_seq || !watermark || !position) return std::nullopt;
  SegmentHeader header{*epoch, *first_seq, *watermark, Position{std::string(*position)}, std::string()};
  if (*version >= 2) {
    auto lineage = r.str();
    if (!lineage) return std::nullopt;
    header.lineage = std::string(*lineage);
  }
  if (r.remaining() != 0) return std::nullopt;
  return header;
}

std::string encode_batch_meta(const BatchMeta& meta) {
  std::string out;
  ByteWriter w(out);
  w.u64(meta.seq);
  w.str(meta.id.pipeline);
  w.u64(meta.id.epoch);
  w.u64(meta.id.seq);
  w.str(meta.position_after.token);
  w.u64(meta.rows);
  return out;
}

std::optional<BatchMeta> decode_batch_meta(std::string_view payload, std::string_view* columns) {
  ByteReader r(payload);
  auto seq = r.u64();
  auto pipeline = r.str();
  auto epoch = r.u64();
  auto id_seq = r.u64();
  auto position = r.str();
  auto rows = r.u64();
  if (!seq || !pipeline || !epoch || !id_seq || !position || !rows) return std::nullopt;
  if (columns != nullptr) *columns = r.rest();
  return BatchMeta{*seq, BatchId{std::string(*pipeline), *epoch, *id_seq}, Position{std::string(*position)}, *rows};
}

std::optional<size_t> batch_meta_bytes(std::string_view payload_front) {
  ByteReader r(payload_front);
  if (!r.u64() || !r.str() || !r.u64() || !r.u64()) return std::nullopt;
  auto position_bytes = r.u32();
  if (!position_bytes) return std::nullopt;
  return r.position() + size_t{*position_bytes} + sizeof(uint64_t);  // the position, then the row count
}

std::string encode_landed(uint64_t watermark) {
  std::string out;
  ByteWriter(out).u64(watermark);
  return out;
}

std::optional<uint64_t> decode_landed(std::string_view payload) {
  ByteReader r(payload);
  auto watermark = r.u64();
  if (!watermark || r.remaining() != 0) return std::nullopt;
  return watermark;
}

Error corruption_error(const fs::path& path, uint64_t offset, std::string_view what, std::string_view pipeline) {
  return Error{ErrorKind::kCorruption,
               fmt::format("WAL corruption in {} at byte offset {}: {}; nothing was changed. Restore DATA_DIR from a "
                           "backup or {}",
                           path.string(), offset, what, reset_advice(pipeline))};
}

Result<SegmentScan> scan_segment(Env& env, const fs::path& path, bool is_newest, std::string_view pipeline) {
  auto size = env.file_size(path);
  if (!size) return std::unexpected(size.error());
  SegmentReader reader(env, path, *size);
  auto corrupt = [&](uint64_t offset, std::string_view what) {
    return std::unexpected(corruption_error(path, offset, what, pipeline));
  };

  SegmentScan scan;
  scan.path = path;
  scan.file_bytes = *size;
  // Only the newest segment can end in a torn write, so only there is every byte checksummed. A segment before it
  // was fdatasynced in full before the next one was created (Wal::start_segment_locked), so no crash can tear it:
  // its large batch payloads are skipped unread, which keeps start-up independent of the WAL's size. Media damage
  // in them is still caught: Wal::read_batch verifies the record's checksum before the batch is landed (kCorruption
  // naming the file and offset). Its small records (header, LANDED) and every batch's metadata are still read and
  // checked here, and the seq chain across records would break on a damaged length.
  const PayloadCheck check = is_newest ? PayloadCheck::kFull : PayloadCheck::kFrontOnly;
  uint64_t offset = 0;
  FramedRecord record;
  while (offset < scan.file_bytes) {
    auto status = reader.read(offset, record, check);
    if (!status) return std::unexpected(status.error());
    if (*status == DecodeStatus::kUnknownType) {
      return corrupt(offset, fmt::format("unknown record type {} (written by a newer version?)", record.type));
    }
    if (*status != DecodeStatus::kOk) {
      // A crash mid-append leaves a damaged record with nothing valid after it, and only in the newest segment
      // (older ones were synced before the next was created). Anything else is damage we must not paper over.
      if (is_newest) {
        auto valid_after = reader.any_valid_record_from(offset + 1);
        if (!valid_after) return std::unexpected(valid_after.error());
        if (!*valid_after) {
          scan.torn_tail = true;
          break;
        }
      }
      return corrupt(offset, *status == DecodeStatus::kIncomplete
                                 ? "incomplete record (its length runs past the end of the file)"
                                 : "checksum mismatch");
    }
    const auto type = static_cast<RecordType>(record.type);
    const bool first = offset == 0;
    if (first != (type == RecordType::kSegmentHeader)) {
      return corrupt(offset, first ? "the first record is not a segment header" : "a second segment header");
    }
    // Small records must fit in the part the reader keeps; only a BATCH's compressed columns may go beyond it.
    if (!is_batch_record(type) && !record.payload_complete) return corrupt(offset, "oversized record");
    switch (type) {
      case RecordType::kSegmentHeader: {
        scan.header = decode_segment_header(record.payload_front);
        if (!scan.header) return corrupt(offset, "malformed segment header");
        scan.landed_watermark = scan.header->landed_watermark;
        break;
      }
      case RecordType::kBatch:
      case RecordType::kBatchBlocks: {
        // The metadata holds the source position after the batch, which can outgrow the front the reader keeps (a
        // File source's position names every object it finished): then it is read in full.
        std::string whole_meta;
        std::string_view meta_bytes = record.payload_front;
        if (!record.payload_complete) {
          const auto needed = batch_meta_bytes(meta_bytes);
          if (needed && *needed > meta_bytes.size() && *needed <= record.total_bytes - kRecordHeaderBytes) {
            auto prefix = reader.payload_prefix(offset, *needed);
            if (!prefix) return std::unexpected(prefix.error());
            whole_meta = std::move(*prefix);
            meta_bytes = whole_meta;
          }
        }
        auto meta = decode_batch_meta(meta_bytes);
        if (!meta) return corrupt(offset, "malformed batch metadata");
        const uint64_t expected_seq = scan.header->first_seq + scan.batches.size();
        if (meta->seq != expected_seq || meta->id.seq != meta->seq || meta->id.epoch != scan.header->epoch) {
          return corrupt(offset, fmt::format("batch {} (epoch {}) where seq {} of epoch {} was expected", meta->seq,
                                             meta->id.epoch, expected_seq, scan.header->epoch));
        }
        meta->id.lineage = scan.header->lineage;  // not repeated in every batch's metadata
        scan.batches.push_back(WalBatchInfo{.seq = meta->seq,
                                            .id = std::move(meta->id),
                                            .position_after = std::move(meta->position_after),
                                            .rows = meta->rows,
                                            .segment = path.string(),
                                            .offset = offset,
                                            .record_bytes = record.total_bytes,
                                            .crc = record.crc,
                                            .landed = false});
        break;
      }
      case RecordType::kLanded: {
        auto watermark = decode_landed(record.payload_front);
        if (!watermark) return corrupt(offset, "malformed LANDED record");
        scan.landed_watermark = std::max(scan.landed_watermark, *watermark);
        break;
      }
    }
    offset += record.total_bytes;
  }
  scan.valid_bytes = offset;
  if (!scan.header && !is_newest) return corrupt(0, "the segment is empty but is not the newest one");
  return scan;
}

}  // namespace skippr::wal
