#include "wal/recovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace skippr::wal {

namespace fs = std::filesystem;

std::string pipeline_name_from_dir(const fs::path& dir) {
  fs::path clean = dir.filename().empty() ? dir.parent_path() : dir;
  return clean.parent_path().filename().string();
}

Result<WalScan> scan_wal(Env& env, const fs::path& dir, std::optional<uint64_t> expected_epoch,
                         std::optional<std::string_view> expected_lineage, std::string_view pipeline) {
  auto names = env.list_dir(dir);
  if (!names) return std::unexpected(names.error());
  std::vector<std::pair<uint64_t, fs::path>> files;
  for (const std::string& name : *names) {
    if (auto seq = parse_segment_file_name(name)) files.emplace_back(*seq, dir / name);
  }
  std::sort(files.begin(), files.end());

  WalScan wal;
  for (size_t i = 0; i < files.size(); ++i) {
    auto scan = scan_segment(env, files[i].second, i + 1 == files.size(), pipeline);
    if (!scan) return std::unexpected(scan.error());
    wal.segments.push_back(std::move(*scan));
  }

  const SegmentScan* previous = nullptr;
  for (size_t i = 0; i < wal.segments.size(); ++i) {
    const SegmentScan& segment = wal.segments[i];
    if (!segment.header) break;  // the empty newest segment, to be removed
    const SegmentHeader& header = *segment.header;
    auto corrupt = [&](std::string what) { return std::unexpected(corruption_error(segment.path, 0, what, pipeline)); };
    if (header.first_seq == 0 || header.first_seq != files[i].first) {
      return corrupt(fmt::format("the header says the segment starts at seq {} but its name says {}", header.first_seq,
                                 files[i].first));
    }
    const uint64_t epoch = expected_epoch ? *expected_epoch : wal.segments.front().header->epoch;
    if (header.epoch != epoch) {
      return corrupt(
          fmt::format("the segment belongs to epoch {} but the pipeline is at epoch {}; the WAL was not "
                      "reset with the pipeline state, or was copied from elsewhere",
                      header.epoch, epoch));
    }
    // Lineages only ever go from none (written before they existed) to the state's: any other change means the WAL
    // and the state come from different places.
    const std::string_view lineage_before = previous != nullptr ? std::string_view(previous->header->lineage) : "";
    const bool lineage_fits =
        expected_lineage ? header.lineage.empty() || header.lineage == *expected_lineage
                         : header.lineage.empty() || lineage_before.empty() || header.lineage == lineage_before;
    if (!lineage_fits || (!lineage_before.empty() && header.lineage != lineage_before)) {
      return corrupt(
          fmt::format("the segment belongs to lineage {} but the pipeline's is {}; the WAL was not reset "
                      "with the pipeline state, or was copied from elsewhere",
                      header.lineage.empty() ? "(none)" : header.lineage,
                      expected_lineage ? std::string(*expected_lineage) : std::string(lineage_before)));
    }
    if (previous != nullptr) {
      const uint64_t expected_first = previous->header->first_seq + previous->batches.size();
      if (header.first_seq != expected_first) {
        return corrupt(
            fmt::format("the segment starts at seq {} but the previous one ends before seq {}; a segment "
                        "is missing or left over",
                        header.first_seq, expected_first));
      }
    }
    wal.epoch = header.epoch;
    wal.lineage = header.lineage;
    wal.landed_watermark = std::max(wal.landed_watermark, segment.landed_watermark);
    wal.last_committed_seq = header.first_seq + segment.batches.size() - 1;
    wal.last_position = segment.batches.empty() ? header.position : segment.batches.back().position_after;
    previous = &segment;
  }
  if (expected_epoch && wal.segments.empty()) wal.epoch = *expected_epoch;

  // Segments are deleted only once all their batches landed, so whatever precedes the oldest one has landed even if
  // the LANDED record saying so was lost.
  if (!wal.segments.empty() && wal.segments.front().header) {
    wal.landed_watermark = std::max(wal.landed_watermark, wal.segments.front().header->first_seq - 1);
  }
  wal.landed_watermark = std::min(wal.landed_watermark, wal.last_committed_seq);
  for (SegmentScan& segment : wal.segments) {
    for (WalBatchInfo& batch : segment.batches) batch.landed = batch.seq <= wal.landed_watermark;
  }
  return wal;
}

}  // namespace skippr::wal
