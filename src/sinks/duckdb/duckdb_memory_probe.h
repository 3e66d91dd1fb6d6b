// A diagnosis aid for peak-RSS work: libduckdb.so allocates through its own jemalloc, which heap profilers of the
// process do not see, so DuckDB is asked itself. Off unless SKIPPR_DUCKDB_MEMORY_EVERY=N is set (bench/duckdb.sh).
#pragma once

#include "clients/duckdb/duckdb_client.h"

namespace skippr {

// Every Nth call, logs (info, to the log) the process RSS, DuckDB's memory per tag (duckdb_memory()) and its
// PRAGMA database_size (buffer pool use and limit, WAL size). Errors of the probe are logged, never returned.
void log_duckdb_memory_if_asked(DuckDbConnection& conn);

}  // namespace skippr
