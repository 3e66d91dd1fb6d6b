// WAL record framing: [u32 length][u32 crc32c(type + payload)][u8 type][payload], little-endian, where length
// counts payload bytes only. The checksum covers the type so a flipped type byte is caught like a flipped payload.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace skippr::wal {

enum class RecordType : uint8_t {
  kSegmentHeader = 1,
  kBatch = 2,  // columns in format 1 (one zstd frame); no longer written, still read
  kLanded = 3,
  kBatchBlocks = 4,  // columns in format 2 (blocks, each raw or zstd); see wal/batch_codec.h
};
bool is_known_record_type(uint8_t type);
bool is_batch_record(RecordType type);

inline constexpr size_t kRecordHeaderBytes = 9;  // length + crc + type

// Frames `payload`, given in pieces so a large compressed part is not copied twice.
std::string encode_record(RecordType type, std::string_view payload_head, std::string_view payload_tail = {});
// The frame header and `payload_head` only: written before `payload_tail`, they make the same bytes as
// encode_record without copying the (large) tail.
std::string encode_record_front(RecordType type, std::string_view payload_head, std::string_view payload_tail);
// The same, given only the tail's size and checksum (crc32c::value of it), computed earlier off the commit path.
std::string encode_record_front(RecordType type, std::string_view payload_head, uint64_t tail_bytes, uint32_t tail_crc);

struct Record {
  RecordType type;
  uint32_t crc = 0;
  std::string_view payload;
  size_t total_bytes = 0;  // header + payload
};

enum class DecodeStatus {
  kOk,
  kIncomplete,        // the header or the payload runs past the end of the data
  kChecksumMismatch,  // complete, but the crc does not match
  kUnknownType,       // checksum fine, type unknown: written by a newer version
};

// Decodes the record starting at `offset` of `data`.
DecodeStatus decode_record(std::string_view data, size_t offset, Record& out);

// True when some offset in [from, data.size()) starts a complete record with a valid checksum: tells a torn tail
// (nothing valid after the damage) from damage in the middle of the data.
bool any_valid_record_from(std::string_view data, size_t from);

}  // namespace skippr::wal
