// Postgres: exactly once. Rows go in by binary COPY into a temporary staging table; one transaction moves them into
// the target (append, or merge_by_key with an order token per row and tombstones for deletes) and records the BatchId
// in the ledger table _skippr_batches. A retry that finds its BatchId there does nothing.
#pragma once

#include <string_view>

#include "core/connector.h"

namespace skippr {

ConnectorSpec postgres_sink_spec();

inline constexpr std::string_view kPgLedgerTable = "_skippr_batches";
// Conventional batch fields a change-data source sets (both optional): the kind of change ("insert", "update",
// "delete"; absent = upsert) and its order token (absent = derived from the BatchId and the row's index).
inline constexpr std::string_view kOpField = "_skippr_op";
inline constexpr std::string_view kOrderField = "_skippr_order";
// merge_by_key: the target's order-token column, and the suffix of its tombstone table.
inline constexpr std::string_view kOrderColumn = "_skippr_order";
inline constexpr std::string_view kTombstoneSuffix = "__skippr_tombstones";

}  // namespace skippr
