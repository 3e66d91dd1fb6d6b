// How the DuckDB sink matches a batch against an existing table: which column types take a field without a silent
// conversion, and names compared as DuckDB compares them. The copy into vectors is in clients/duckdb/duckdb_vectors.h.
#pragma once

#include <optional>
#include <string_view>

#include "clients/duckdb/duckdb_vectors.h"
#include "core/batch.h"
#include "sinks/kit/schema_evolution.h"

namespace skippr {

// Whether an existing column (its information_schema.columns.data_type, e.g. "TIMESTAMP WITH TIME ZONE") holds a
// field of `type` with the same physical values, so copy_column_to_vector is exact.
bool duckdb_column_accepts(std::string_view column_data_type, Type type);

// DuckDB matches identifiers case-insensitively (quoted ones too), so a batch's "ID" is the table's "id".
bool duckdb_same_identifier(std::string_view a, std::string_view b);

// Name matching, type acceptance and quoting for the shared schema-evolution walk.
ColumnRules duckdb_column_rules();

}  // namespace skippr
