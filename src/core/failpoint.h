// Named points in the commit protocol where a test or chaos mode may crash the process on purpose.
// Production code calls hit("wal.before_fsync"); with no handler installed it costs one relaxed load.
#pragma once

#include <optional>
#include <string_view>

namespace skippr::failpoint {

using Handler = void (*)(std::string_view name);

// The points the engine and the sinks pass through, in protocol order (chaos mode arms them by name).
inline constexpr std::string_view kWalBeforeFsync = "wal.before_fsync";
inline constexpr std::string_view kWalAfterFsync = "wal.after_fsync";
inline constexpr std::string_view kSinkInTransaction = "sink.in_transaction";
inline constexpr std::string_view kSinkAfterCommit = "sink.after_commit";
inline constexpr std::string_view kWalSegmentDelete = "wal.segment_delete";
// Coalesced landing: inside a group's transaction with some of its batches written and more to come; and after a
// group of several batches committed, before its LANDED mark.
inline constexpr std::string_view kSinkInGroup = "sink.in_group";
inline constexpr std::string_view kSinkAfterGroupCommit = "sink.after_group_commit";
inline constexpr std::string_view kAll[] = {kWalBeforeFsync,   kWalAfterFsync, kSinkInTransaction,   kSinkAfterCommit,
                                            kWalSegmentDelete, kSinkInGroup,   kSinkAfterGroupCommit};
// Points only some sinks pass, armed by name (SKIPPR_CHAOS_FAILPOINT) by their tests. Iceberg's storage catalog:
// v<N+1>.metadata.json is created (the commit), its version hint not yet written.
inline constexpr std::string_view kLakeBeforeVersionHint = "lake.before_version_hint";
// A batch of several streams landing one table after another (sinks without a transaction across tables): some of
// its tables landed, the next not yet.
inline constexpr std::string_view kSinkBetweenTables = "sink.between_tables";
inline constexpr std::string_view kSinkSpecific[] = {kLakeBeforeVersionHint, kSinkBetweenTables};

// The point of that name (kAll or kSinkSpecific, whose names live for the program), or nullopt.
inline std::optional<std::string_view> known_point(std::string_view name) {
  for (auto point : kAll) {
    if (point == name) return point;
  }
  for (auto point : kSinkSpecific) {
    if (point == name) return point;
  }
  return std::nullopt;
}
// The points chaos mode picks from by its seed: those every run passes through. The two coalesced-landing points
// are reached only when batches wait for a grouping sink, so a run armed there would often end by the timer alone;
// they are armed by name (SKIPPR_CHAOS_FAILPOINT).
inline constexpr std::string_view kArmedAtRandom[] = {kWalBeforeFsync, kWalAfterFsync, kSinkInTransaction,
                                                      kSinkAfterCommit, kWalSegmentDelete};

void set_handler(Handler handler);
void hit(std::string_view name);

}  // namespace skippr::failpoint
