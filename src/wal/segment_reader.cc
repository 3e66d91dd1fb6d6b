#include "wal/segment_reader.h"

#include <algorithm>

#include "core/crc32c.h"
#include "wal/byte_io.h"

namespace skippr::wal {

Result<std::string_view> SegmentReader::view(uint64_t offset, size_t n, size_t read_ahead) {
  const uint64_t window_end = window_start_ + window_.size();
  if (offset < window_start_ || offset + n > window_end) {
    auto data = env_.read_range(path_, offset, std::max<uint64_t>(n, read_ahead));
    if (!data) return std::unexpected(data.error());
    window_ = std::move(*data);
    window_start_ = offset;
  }
  const size_t skip = offset - window_start_;
  return std::string_view(window_).substr(skip, std::min(n, window_.size() - skip));
}

Result<DecodeStatus> SegmentReader::read(uint64_t offset, FramedRecord& out, PayloadCheck check) {
  if (offset > file_bytes_ || file_bytes_ - offset < kRecordHeaderBytes) return DecodeStatus::kIncomplete;
  // Skipping large payloads: read no more than a header and a payload front at a time, or the window would
  // read (a MiB of) the payload it is about to skip.
  const size_t read_ahead = check == PayloadCheck::kFull ? kWindowBytes : kRecordHeaderBytes + kPayloadFrontBytes;
  auto header = view(offset, kRecordHeaderBytes, read_ahead);
  if (!header) return std::unexpected(header.error());
  if (header->size() < kRecordHeaderBytes) return DecodeStatus::kIncomplete;  // the file shrank under us
  ByteReader r(*header);
  const uint32_t length = *r.u32();
  out.crc = *r.u32();
  out.type = *r.u8();
  out.total_bytes = kRecordHeaderBytes + uint64_t{length};
  if (file_bytes_ - offset < out.total_bytes) return DecodeStatus::kIncomplete;

  // Records other than batches are metadata the caller needs whole (a segment header holds a source position, which
  // can outgrow the front: a File source's names every object it finished), so they are always read in full.
  const bool keep_whole = !is_batch_record(static_cast<RecordType>(out.type));
  out.payload_complete = keep_whole || length <= kPayloadFrontBytes;
  if (check == PayloadCheck::kFrontOnly && !out.payload_complete) {
    auto front = view(offset + kRecordHeaderBytes, kPayloadFrontBytes, read_ahead);
    if (!front) return std::unexpected(front.error());
    if (front->size() < kPayloadFrontBytes) return DecodeStatus::kIncomplete;  // the file shrank under us
    out.payload_front.assign(*front);
    out.checksum_verified = false;
    if (!is_known_record_type(out.type)) return DecodeStatus::kUnknownType;
    return DecodeStatus::kOk;
  }

  // Checksum the payload window by window; keep its front for the caller.
  out.payload_front.clear();
  uint32_t crc = crc32c::extend(0, &out.type, 1);
  uint64_t at = offset + kRecordHeaderBytes;
  uint64_t left = length;
  while (left > 0) {
    auto chunk = view(at, static_cast<size_t>(std::min<uint64_t>(left, kWindowBytes)));
    if (!chunk) return std::unexpected(chunk.error());
    if (chunk->empty()) return DecodeStatus::kIncomplete;
    crc = crc32c::extend(crc, chunk->data(), chunk->size());
    const size_t keep = keep_whole ? length : kPayloadFrontBytes;
    if (out.payload_front.size() < keep) out.payload_front.append(chunk->substr(0, keep - out.payload_front.size()));
    at += chunk->size();
    left -= chunk->size();
  }
  if (crc != out.crc) return DecodeStatus::kChecksumMismatch;
  out.checksum_verified = true;
  if (!is_known_record_type(out.type)) return DecodeStatus::kUnknownType;
  return DecodeStatus::kOk;
}

Result<std::string> SegmentReader::payload_prefix(uint64_t offset, size_t n) {
  auto data = env_.read_range(path_, offset + kRecordHeaderBytes, n);
  if (!data) return std::unexpected(data.error());
  if (data->size() < n) return fail(ErrorKind::kCorruption, "the file shrank while it was read");
  return std::move(*data);
}

Result<bool> SegmentReader::any_valid_record_from(uint64_t from) {
  if (from >= file_bytes_) return false;
  auto rest = env_.read_range(path_, from, file_bytes_ - from);
  if (!rest) return std::unexpected(rest.error());
  return wal::any_valid_record_from(*rest, 0);
}

}  // namespace skippr::wal
