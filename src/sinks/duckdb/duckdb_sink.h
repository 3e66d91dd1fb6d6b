// DuckDB: exactly once. The rows and the BatchId (in the ledger table _skippr_batches) are committed in one
// transaction; a retry that finds its BatchId in the ledger does nothing. landing: append (the appender) or
// merge_by_key (duckdb_merge.h).
#pragma once

#include "core/connector.h"

namespace skippr {

ConnectorSpec duckdb_sink_spec();

// The ledger: one row per landed batch, written in the same transaction as the batch's rows.
inline constexpr std::string_view kDuckDbLedgerTable = "_skippr_batches";

}  // namespace skippr
