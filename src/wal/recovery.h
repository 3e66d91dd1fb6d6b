// Reads a whole WAL directory into the state a writer resumes from, checking every segment and the seams between
// them. Changes nothing: Wal::open applies the repairs (torn tail, empty newest segment) this reports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/result.h"
#include "wal/segment.h"

namespace skippr::wal {

struct WalScan {
  std::vector<SegmentScan> segments;  // in seq order; only the last may lack a header (empty newest segment)
  uint64_t epoch = 0;
  std::string lineage;  // of the newest segment
  uint64_t landed_watermark = 0;
  uint64_t last_committed_seq = 0;
  Position last_position;

  const SegmentScan* newest() const { return segments.empty() ? nullptr : &segments.back(); }
  // True when the newest segment holds no header and should be removed (crash right after it was created).
  bool newest_is_empty() const { return !segments.empty() && !segments.back().header; }
};

// `expected_epoch`: every segment must belong to it (open); without it the segments must merely agree (inspect).
// `expected_lineage` likewise, except that segments written before lineages existed (none) may precede it.
Result<WalScan> scan_wal(Env& env, const std::filesystem::path& dir, std::optional<uint64_t> expected_epoch,
                         std::optional<std::string_view> expected_lineage, std::string_view pipeline);

// The pipeline's name from DATA_DIR/pipelines/<name>/wal, for messages when the caller does not know it.
std::string pipeline_name_from_dir(const std::filesystem::path& dir);

}  // namespace skippr::wal
