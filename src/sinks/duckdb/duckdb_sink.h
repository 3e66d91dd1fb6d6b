// DuckDB: exactly once. The rows and the BatchId (in the ledger table _skippr_batches, see sinks/batch_ledger.h) are
// committed in one transaction; a retry that finds its BatchId in the ledger does nothing. landing: append (the
// appender) or merge_by_key (duckdb_merge.h).
#pragma once

#include "core/connector.h"

namespace skippr {

ConnectorSpec duckdb_sink_spec();

}  // namespace skippr
