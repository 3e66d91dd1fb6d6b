// How a batch's types land in DuckDB: the SQL type a new column gets, which existing column types take a field
// without a silent conversion, and the copy of a Column's rows into a duckdb_vector.
#pragma once

#include <duckdb.h>

#include <optional>
#include <string_view>

#include "core/batch.h"
#include "sinks/schema_evolution.h"

namespace skippr {

// The column type CREATE TABLE / ADD COLUMN uses for a field of `type`.
std::string_view duckdb_sql_type(Type type);

// Whether an existing column (its information_schema.columns.data_type, e.g. "TIMESTAMP WITH TIME ZONE") holds a
// field of `type` with the same physical values, so the copy below is exact.
bool duckdb_column_accepts(std::string_view column_data_type, Type type);

// DuckDB matches identifiers case-insensitively (quoted ones too), so a batch's "ID" is the table's "id".
bool duckdb_same_identifier(std::string_view a, std::string_view b);

// Name matching, type acceptance and quoting for the shared schema-evolution walk.
ColumnRules duckdb_column_rules();

// Copies rows [first, first + count) of `column` into rows [0, count) of `vector`, whose type accepts the column's
// type (see above). Strings must be valid UTF-8 (see first_invalid_utf8_row).
void copy_column_to_vector(const Column& column, size_t first, size_t count, duckdb_vector vector);

// Marks rows [0, count) of `vector` NULL: a table column the batch does not have.
void fill_vector_with_nulls(duckdb_vector vector, size_t count);

// DuckDB's VARCHAR must be valid UTF-8 (anything else is undefined behaviour later), so string and JSON columns are
// checked before they are copied. Returns the first bad row, if any.
std::optional<size_t> first_invalid_utf8_row(const Column& column);

}  // namespace skippr
