// The conventional batch fields a change-data source sets (both optional), shared by the sinks that merge by key:
// the kind of change ("insert", "update", "delete"; absent = upsert) and its order token (absent = derived from the
// BatchId and the row's index). They steer the merge and are never stored as data columns.
#pragma once

#include <string_view>

namespace skippr {

inline constexpr std::string_view kOpField = "_skippr_op";
inline constexpr std::string_view kOrderField = "_skippr_order";
// merge_by_key: the target's order-token column, and the suffix of its tombstone table.
inline constexpr std::string_view kOrderColumn = "_skippr_order";
inline constexpr std::string_view kTombstoneSuffix = "__skippr_tombstones";

inline bool is_change_field(std::string_view name) { return name == kOpField || name == kOrderField; }

}  // namespace skippr
