// DuckDB: exactly once. The rows and the BatchId (in the ledger table _skippr_batches) are committed in one
// transaction; a retry that finds its BatchId in the ledger does nothing.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec duckdb_sink_spec();
}
