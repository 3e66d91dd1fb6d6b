// Reads a segment file front to back through a bounded window, so recovery of a WAL of any size holds at most
// kWindowBytes of it in memory: record headers and small payloads are parsed from the window; large payloads are
// either checksummed as the window slides over them, or (PayloadCheck::kFrontOnly) skipped after their front,
// never decompressed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/env.h"
#include "core/result.h"
#include "wal/record_format.h"

namespace skippr::wal {

// A record's frame, its checksum verdict, and the front of its payload (enough for every small record and for the
// metadata at the front of a BATCH payload).
struct FramedRecord {
  uint8_t type = 0;
  uint32_t crc = 0;
  uint64_t total_bytes = 0;   // header + payload
  std::string payload_front;  // the whole payload when it is at most kPayloadFrontBytes or not a batch
  bool payload_complete = false;
  bool checksum_verified = false;  // false only for a large payload read with PayloadCheck::kFrontOnly
};

enum class PayloadCheck {
  kFull,       // checksum every payload (reads the whole file)
  kFrontOnly,  // checksum small records fully; read only the front of a payload over kPayloadFrontBytes and seek
               // past the rest unchecked (the caller must verify it before trusting it: Wal::read_batch does)
};

class SegmentReader {
 public:
  static constexpr size_t kWindowBytes = 1 << 20;
  static constexpr size_t kPayloadFrontBytes = 64 << 10;

  SegmentReader(Env& env, std::filesystem::path path, uint64_t file_bytes)
      : env_(env), path_(std::move(path)), file_bytes_(file_bytes) {}

  // Decodes the record at `offset` (kOk, kIncomplete, kChecksumMismatch or kUnknownType, as decode_record does).
  Result<DecodeStatus> read(uint64_t offset, FramedRecord& out, PayloadCheck check = PayloadCheck::kFull);

  // The first `n` bytes of the payload of the record at `offset` (n at most its payload): for metadata longer than
  // the front a read keeps, such as a batch whose source position is large.
  Result<std::string> payload_prefix(uint64_t offset, size_t n);

  // True when some offset in [from, end of file) starts a valid record: tells a torn tail from damage in the middle.
  // Reads the rest of the file at once; only called on damage, which is rare, and bounded by the segment size.
  Result<bool> any_valid_record_from(uint64_t from);

 private:
  // Makes [offset, offset + n) readable from window(), reading at least `read_ahead` bytes when it must read;
  // n <= kWindowBytes. Fewer bytes at the end of the file.
  Result<std::string_view> view(uint64_t offset, size_t n, size_t read_ahead = kWindowBytes);

  Env& env_;
  std::filesystem::path path_;
  uint64_t file_bytes_;
  std::string window_;
  uint64_t window_start_ = 0;
};

}  // namespace skippr::wal
