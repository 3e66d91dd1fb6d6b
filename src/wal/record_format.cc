#include "wal/record_format.h"

#include "wal/byte_io.h"
#include "core/crc32c.h"

namespace skippr::wal {

bool is_known_record_type(uint8_t type) {
  return type >= static_cast<uint8_t>(RecordType::kSegmentHeader) &&
         type <= static_cast<uint8_t>(RecordType::kBatchBlocks);
}

bool is_batch_record(RecordType type) { return type == RecordType::kBatch || type == RecordType::kBatchBlocks; }

std::string encode_record(RecordType type, std::string_view payload_head, std::string_view payload_tail) {
  std::string out = encode_record_front(type, payload_head, payload_tail);
  out.append(payload_tail);
  return out;
}

std::string encode_record_front(RecordType type, std::string_view payload_head, std::string_view payload_tail) {
  return encode_record_front(type, payload_head, payload_tail.size(), crc32c::value(payload_tail));
}

std::string encode_record_front(RecordType type, std::string_view payload_head, uint64_t tail_bytes,
                                uint32_t tail_crc) {
  const auto type_byte = static_cast<uint8_t>(type);
  uint32_t crc = crc32c::extend(0, &type_byte, 1);
  crc = crc32c::extend(crc, payload_head.data(), payload_head.size());
  crc = crc32c::combine(crc, tail_crc, tail_bytes);

  std::string out;
  out.reserve(kRecordHeaderBytes + payload_head.size());  // the tail is written separately, or appended by the caller
  ByteWriter w(out);
  w.u32(static_cast<uint32_t>(payload_head.size() + tail_bytes));
  w.u32(crc);
  w.u8(type_byte);
  w.bytes(payload_head);
  return out;
}

DecodeStatus decode_record(std::string_view data, size_t offset, Record& out) {
  if (offset > data.size() || data.size() - offset < kRecordHeaderBytes) return DecodeStatus::kIncomplete;
  ByteReader r(data.substr(offset));
  const uint32_t length = *r.u32();
  const uint32_t stored_crc = *r.u32();
  const uint8_t type = *r.u8();
  if (r.remaining() < length) return DecodeStatus::kIncomplete;
  std::string_view payload = r.rest().substr(0, length);
  uint32_t crc = crc32c::extend(0, &type, 1);
  crc = crc32c::extend(crc, payload.data(), payload.size());
  if (crc != stored_crc) return DecodeStatus::kChecksumMismatch;
  if (!is_known_record_type(type)) return DecodeStatus::kUnknownType;
  out = Record{static_cast<RecordType>(type), stored_crc, payload, kRecordHeaderBytes + length};
  return DecodeStatus::kOk;
}

bool any_valid_record_from(std::string_view data, size_t from) {
  Record ignored{};
  for (size_t offset = from; offset + kRecordHeaderBytes <= data.size(); ++offset) {
    // Cheap filters first so scanning a long garbage tail does not checksum at every byte.
    const auto type = static_cast<uint8_t>(data[offset + 8]);
    if (!is_known_record_type(type)) continue;
    ByteReader r(data.substr(offset, 4));
    if (*r.u32() > data.size() - offset - kRecordHeaderBytes) continue;
    if (decode_record(data, offset, ignored) == DecodeStatus::kOk) return true;
  }
  return false;
}

}  // namespace skippr::wal
