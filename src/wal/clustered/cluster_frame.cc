#include "wal/clustered/cluster_frame.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/crc32c.h"

namespace skippr::cluster {

namespace {

constexpr uint32_t kMagic = 0x46434b53;  // "SKCF" little-endian

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint32_t get_u32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(in[at + static_cast<size_t>(i)]);
  return v;
}

// The checksum covers the header fields after the magic (version, type, lengths), then meta and blob.
uint32_t frame_crc(std::string_view fixed, std::string_view meta, std::string_view blob) {
  uint32_t crc = crc32c::extend(0, fixed.data(), fixed.size());
  crc = crc32c::extend(crc, meta.data(), meta.size());
  return crc32c::extend(crc, blob.data(), blob.size());
}

bool known_type(uint8_t type) { return type >= 1 && type <= static_cast<uint8_t>(FrameType::kCaughtUp); }

}  // namespace

std::string_view to_string(FrameType type) {
  switch (type) {
    case FrameType::kHello:
      return "HELLO";
    case FrameType::kCopyState:
      return "COPY_STATE";
    case FrameType::kRefused:
      return "REFUSED";
    case FrameType::kResetCopy:
      return "RESET_COPY";
    case FrameType::kBatch:
      return "BATCH";
    case FrameType::kAck:
      return "ACK";
    case FrameType::kLanded:
      return "LANDED";
    case FrameType::kCaughtUp:
      return "CAUGHT_UP";
  }
  return "?";
}

std::string make_meta(const FrameMeta& id, const nlohmann::json& extra) {
  nlohmann::json j = extra.is_object() ? extra : nlohmann::json::object();
  j["pipeline"] = id.pipeline;
  j["lineage"] = id.lineage;
  j["epoch"] = id.epoch;
  j["term"] = id.term;
  j["seq"] = id.seq;
  return j.dump();
}

Result<FrameMeta> parse_meta(const Frame& frame, nlohmann::json& object) {
  object = nlohmann::json::parse(frame.meta, nullptr, false);
  auto is_u64 = [&](const char* key) { return object.contains(key) && object[key].is_number_unsigned(); };
  auto is_str = [&](const char* key) { return object.contains(key) && object[key].is_string(); };
  if (!object.is_object() || !is_str("pipeline") || !is_str("lineage") || !is_u64("epoch") || !is_u64("term") ||
      !is_u64("seq")) {
    return fail(ErrorKind::kCorruption,
                fmt::format("a {} frame from the peer has no readable identity", to_string(frame.type)));
  }
  return FrameMeta{object["pipeline"].get<std::string>(), object["lineage"].get<std::string>(),
                   object["epoch"].get<uint64_t>(), object["term"].get<uint64_t>(), object["seq"].get<uint64_t>()};
}

std::string encode_frame_header(FrameType type, std::string_view meta, std::string_view blob) {
  std::string out;
  out.reserve(kFrameHeaderBytes);
  put_u32(out, kMagic);
  out.push_back(static_cast<char>(kProtocolVersion));
  out.push_back(static_cast<char>(type));
  out.push_back('\0');
  out.push_back('\0');
  put_u32(out, static_cast<uint32_t>(meta.size()));
  put_u32(out, static_cast<uint32_t>(blob.size()));
  put_u32(out, frame_crc(std::string_view(out).substr(4, 12), meta, blob));
  return out;
}

Result<FrameHeader> decode_frame_header(std::string_view header) {
  if (header.size() != kFrameHeaderBytes || get_u32(header, 0) != kMagic) {
    return fail(ErrorKind::kCorruption, "the peer did not speak the skipprd cluster protocol (bad magic)");
  }
  const auto version = static_cast<uint8_t>(header[4]);
  if (version != kProtocolVersion) {
    return fail(ErrorKind::kCorruption,
                fmt::format("the peer speaks cluster protocol version {}, this skipprd speaks {}; run the same "
                            "skipprd version on both machines",
                            version, kProtocolVersion));
  }
  const auto type = static_cast<uint8_t>(header[5]);
  if (!known_type(type)) return fail(ErrorKind::kCorruption, fmt::format("unknown cluster frame type {}", type));
  FrameHeader out{static_cast<FrameType>(type), get_u32(header, 8), get_u32(header, 12), get_u32(header, 16)};
  if (out.meta_bytes > (1u << 20) || uint64_t{out.meta_bytes} + out.blob_bytes > kMaxFrameBytes) {
    return fail(ErrorKind::kCorruption, fmt::format("a {} frame announces {} + {} bytes, more than any batch",
                                                    to_string(out.type), out.meta_bytes, out.blob_bytes));
  }
  return out;
}

Result<Frame> finish_frame(const FrameHeader& header, std::string meta, std::string blob) {
  Frame frame{header.type, std::move(meta), std::move(blob)};
  const std::string expected = encode_frame_header(frame.type, frame.meta, frame.blob);
  if (get_u32(expected, 16) != header.crc) {
    return fail(ErrorKind::kCorruption, fmt::format("a {} frame from the peer failed its checksum (damaged on the way)",
                                                    to_string(frame.type)));
  }
  return frame;
}

}  // namespace skippr::cluster
