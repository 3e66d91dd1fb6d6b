// How a batch's types land in Databricks (Delta tables through COPY INTO and MERGE): the type of a new column,
// which existing column types take a field, and the SQL that turns the text a value travels as in the batch's file
// (every value a JSON string, read back with primitivesAsString, so no type is guessed from a file) into the column's
// type.
#pragma once

#include <string>
#include <string_view>

#include "core/batch.h"
#include "sinks/kit/schema_evolution.h"

namespace skippr {

// BOOLEAN, BIGINT, DOUBLE, STRING, BINARY, TIMESTAMP (an instant), DATE; json as STRING (its JSON text).
std::string dbx_new_column_type(Type type);
// The name rule (Databricks matches column names ignoring case), the types a column of each kind takes (as
// information_schema.columns.full_data_type spells them, any case), the narrower integer and decimal ranges.
ColumnRules dbx_column_rules();
// The SQL that turns the text `value` (a column read from the batch's file, formats/json_rows.h's
// text_valued_json_lines) into a value of `column_type`.
std::string dbx_convert(std::string_view value, std::string_view column_type);

}  // namespace skippr
