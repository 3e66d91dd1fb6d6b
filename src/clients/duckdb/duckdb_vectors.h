// A batch's columns into DuckDB's vectors, for everything that hands DuckDB a batch (the DuckDB sink's appender,
// the File sink's Parquet writer): the SQL type a field gets, the copy of a Column's rows into a duckdb_vector, and
// the UTF-8 check DuckDB's VARCHAR needs first.
#pragma once

#include <duckdb.h>

#include <optional>
#include <string_view>

#include "core/batch.h"

namespace skippr {

// The column type CREATE TABLE / ADD COLUMN uses for a field of `type`.
std::string_view duckdb_sql_type(Type type);

// Copies rows [first, first + count) of `column` into rows [0, count) of `vector`, whose type accepts the column's
// type (see above). Strings must be valid UTF-8 (see first_invalid_utf8_row).
void copy_column_to_vector(const Column& column, size_t first, size_t count, duckdb_vector vector);

// Marks rows [0, count) of `vector` NULL: a table column the batch does not have.
void fill_vector_with_nulls(duckdb_vector vector, size_t count);

// DuckDB's VARCHAR must be valid UTF-8 (anything else is undefined behaviour later), so string and JSON columns are
// checked before they are copied. Returns the first bad row, if any.
std::optional<size_t> first_invalid_utf8_row(const Column& column);

}  // namespace skippr
