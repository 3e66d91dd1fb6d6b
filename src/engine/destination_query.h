// `skipprd query --sql "SELECT ..."`: a look at what landed, for a pipeline whose destination is a DuckDB file (the
// sample's, and Debian has no DuckDB CLI). The file is opened read-only, so the statement cannot change it, and only
// for the statement: a running sync holds the file only while it lands (sinks/duckdb), so a query between polls
// gets it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "engine/control.h"

namespace skippr {

// True for the statements that read a destination (SELECT, WITH, FROM, DESCRIBE, SUMMARIZE, EXPLAIN), not the control
// language.
bool is_destination_query(std::string_view sql);

// The pipelines of `config` that land in a DuckDB file, by name.
std::vector<std::string> duckdb_pipelines(const Config& config);

// Runs `sql` against the DuckDB file of `pipeline`'s sink; `pipeline` may be empty when exactly one pipeline lands
// in a DuckDB file. kConfig when there is no such pipeline or its sink is not DuckDB; kUnavailable while a run holds
// the file (try again); DuckDB's message for a statement it refuses.
Result<QueryResult> query_destination(std::string_view sql, const std::string& pipeline, const Config* config);

}  // namespace skippr
