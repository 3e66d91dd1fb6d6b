// The conventional batch fields a change-data source sets (both optional), shared by the sinks that merge by key:
// the kind of change ("insert", "update", "delete", "truncate"; absent = upsert) and its order token (absent =
// derived from the BatchId and the row's index). They steer the merge and are never stored as data columns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

inline constexpr std::string_view kOpField = "_skippr_op";
inline constexpr std::string_view kOrderField = "_skippr_order";
// merge_by_key: the target's order-token column, and the suffix of its tombstone table.
inline constexpr std::string_view kOrderColumn = "_skippr_order";
inline constexpr std::string_view kTombstoneSuffix = "__skippr_tombstones";

inline bool is_change_field(std::string_view name) { return name == kOpField || name == kOrderField; }

// _skippr_op = 'truncate' (with _skippr_order T, the key NULL): every row of the target with an order token below T
// is gone (a CDC source's TRUNCATE, or the end of its snapshot: what the snapshot did not read is not in the source).
// A merging sink deletes the target's older rows and does not apply the batch's rows older than T.
inline constexpr std::string_view kTruncateOp = "truncate";
bool has_truncates(const Batch& batch);

// The order token the sinks compare per key, as a decimal string: (position << 32) + sequence. A CDC source makes
// `position` grow with every source transaction (Postgres: its commit LSN; MySQL: binlog file number and offset)
// and `sequence` with every change inside one (0 for snapshot rows, taken at the snapshot's position, so every change
// streamed later outranks them).
std::string change_order_token(uint64_t position, uint64_t sequence);

// Adds the two change fields to a CDC stream's batch (after its data columns), and appends the truncate row that
// ends a snapshot read into merge_by_key (every data column NULL): what the snapshot did not read is not in the
// source, so the target's rows older than `token` go.
void add_change_fields(Batch& batch);
void append_truncate_row(Batch& batch, const std::string& token);

// kBadInput naming the field and row when a key field (by index in the batch) is null (but in a truncate, which has
// no key), `_skippr_op` is not insert/update/delete/truncate/null, a truncate has no `_skippr_order`, or
// `_skippr_order` is not a non-negative decimal integer of at most 38 digits: every merging sink reads a batch alike.
Status check_change_fields(const Batch& batch, const std::vector<size_t>& key_fields, std::string_view where);

}  // namespace skippr
