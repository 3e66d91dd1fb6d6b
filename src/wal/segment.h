// One WAL segment file: its name, the payloads of its small records, and a scan that validates it record by record
// without decompressing any batch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/env.h"
#include "core/result.h"
#include "wal/wal.h"

namespace skippr::wal {

// "<first seq, 20 digits>.wal", so the lexical order of the names is the seq order.
std::string segment_file_name(uint64_t first_seq);
std::optional<uint64_t> parse_segment_file_name(std::string_view name);

// First record of every segment: enough to resume from this segment alone.
struct SegmentHeader {
  uint64_t epoch = 0;
  uint64_t first_seq = 0;
  uint64_t landed_watermark = 0;
  Position position;  // resume point at the segment's start (position_after of the batch before first_seq)
  // Of every batch in the segment (format 2); empty in format 1, written before lineages existed. A WAL opened with
  // another lineage than its newest segment's starts a new segment before its next commit, so one segment never
  // holds two.
  std::string lineage = {};
};
std::string encode_segment_header(const SegmentHeader& header);
std::optional<SegmentHeader> decode_segment_header(std::string_view payload);

// The small, uncompressed front of a BATCH payload; the compressed columns follow it.
struct BatchMeta {
  uint64_t seq = 0;
  BatchId id;
  Position position_after;
  uint64_t rows = 0;
};
std::string encode_batch_meta(const BatchMeta& meta);
// On success `columns` is set to the compressed part that follows the metadata.
std::optional<BatchMeta> decode_batch_meta(std::string_view payload, std::string_view* columns = nullptr);
// How many bytes the batch metadata at the front of `payload_front` takes, read from its length fields (which come
// before the position, the one part that can be large); nullopt when even those are not all there.
std::optional<size_t> batch_meta_bytes(std::string_view payload_front);

std::string encode_landed(uint64_t watermark);
std::optional<uint64_t> decode_landed(std::string_view payload);

struct SegmentScan {
  std::filesystem::path path;
  uint64_t file_bytes = 0;
  uint64_t valid_bytes = 0;             // the prefix made of valid records; < file_bytes when the tail is torn
  std::optional<SegmentHeader> header;  // absent only for an empty newest segment (crash right after creation)
  std::vector<WalBatchInfo> batches;
  uint64_t landed_watermark = 0;  // highest of the header's and the LANDED records'
  bool torn_tail = false;
};

// Reads and checks one segment. With `is_newest`, an incomplete or checksum-failing record followed by nothing
// valid is a torn write (reported through torn_tail/valid_bytes, nothing is changed here); any other damage is
// kCorruption naming the file and the byte offset. Segments before the newest are read without their large batch
// payloads (see scan_segment). `pipeline` only names the pipeline in error messages.
Result<SegmentScan> scan_segment(Env& env, const std::filesystem::path& path, bool is_newest,
                                 std::string_view pipeline);

// The kCorruption error every WAL check reports: what, where, and what the user can do.
Error corruption_error(const std::filesystem::path& path, uint64_t offset, std::string_view what,
                       std::string_view pipeline);

}  // namespace skippr::wal
