// The frames a clustered primary and its replica exchange (WAL_STORAGE=clustered, `skipprd replica`).
//
// On the wire: [u32 magic "SKCF"][u8 version][u8 type][u16 zero][u32 meta length][u32 blob length]
//              [u32 crc32c over everything after the magic and before the crc, then meta and blob][meta][blob]
// `meta` is a small JSON object naming the pipeline, lineage, epoch, term and seq the frame is about, so a frame
// sent to the wrong replica, for another pipeline or lineage, from an older term, or out of order is refused rather
// than applied; `blob` carries a batch's encoded columns (the WAL's own block encoding, see wal/batch_codec.h).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr::cluster {

inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr std::string_view kFrameMagicBytes = "SKCF";  // the first four bytes of every frame
inline constexpr size_t kFrameHeaderBytes = 20;
// A batch is at most BUFFER_THRESHOLD_BYTES encoded; a frame announcing more is refused before it is read.
inline constexpr uint64_t kMaxFrameBytes = 1ull << 31;

enum class FrameType : uint8_t {
  kHello = 1,      // primary -> replica: who I am (pipeline, lineage, epoch, term) and what my WAL holds
  kCopyState = 2,  // replica -> primary: what the copy here holds
  kRefused = 3,    // replica -> primary: the session is over, and why (fenced, busy, misdirected)
  kResetCopy = 4,  // primary -> replica: the copy does not match; start it again at `first_seq`
  kBatch = 5,      // primary -> replica: one committed batch; the replica acks once it is fdatasynced
  kAck = 6,        // replica -> primary: every batch up to `seq` is durable here
  kLanded = 7,     // primary -> replica: every batch up to `seq` has landed (no answer)
  kCaughtUp = 8,   // primary -> replica: the copy now holds everything the primary's WAL does (acked)
};
std::string_view to_string(FrameType type);

// The identity every frame carries. `seq` is the batch (or watermark) the frame is about.
struct FrameMeta {
  std::string pipeline;
  std::string lineage;
  uint64_t epoch = 0;
  uint64_t term = 0;
  uint64_t seq = 0;
};

struct Frame {
  FrameType type = FrameType::kHello;
  std::string meta;  // JSON object: FrameMeta's fields plus the type's own
  std::string blob;
};

// The frame's meta: the identity plus the fields of `extra` (a JSON object).
std::string make_meta(const FrameMeta& id, const nlohmann::json& extra);
// The meta's identity and the whole object; kCorruption when it is not a JSON object holding the identity.
Result<FrameMeta> parse_meta(const Frame& frame, nlohmann::json& object);

// The fixed header in front of a frame's meta and blob.
std::string encode_frame_header(FrameType type, std::string_view meta, std::string_view blob);

// What the header says; kCorruption when the magic or the version is not ours or the lengths are absurd.
struct FrameHeader {
  FrameType type;
  uint32_t meta_bytes = 0;
  uint32_t blob_bytes = 0;
  uint32_t crc = 0;
};
Result<FrameHeader> decode_frame_header(std::string_view header);
// The frame once its meta and blob are read; kCorruption when the checksum does not match.
Result<Frame> finish_frame(const FrameHeader& header, std::string meta, std::string blob);

}  // namespace skippr::cluster
