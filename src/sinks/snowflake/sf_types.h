// How a batch's types land in Snowflake: the type of a new column, which existing column types take a field, and
// how a value travels inside the multi-statement request (as a string literal, converted by the SELECT around the
// VALUES list to the column's type).
#pragma once

#include <string>
#include <string_view>

#include "core/batch.h"

namespace skippr {

// NUMBER(38,0), FLOAT, VARCHAR, BOOLEAN, BINARY, TIMESTAMP_NTZ(6) (UTC wall time), DATE, VARIANT.
std::string sf_new_column_type(Type type);
// Whether a column of `column_type` (as information_schema.columns.data_type spells it: NUMBER, TEXT, ...) takes a
// field of `type` without a lossy or surprising conversion.
bool sf_column_accepts(std::string_view column_type, Type type);
// The SQL that turns the VALUES column `value` (a string literal or NULL) into a value of `column_type`; binary
// arrives as `binary_format` text (HEX in a literal, BASE64 in a staged file).
std::string sf_convert(std::string_view value, std::string_view column_type, std::string_view binary_format = "HEX");
// Row `row` of `column` as the literal sf_convert takes (NULL, or a quoted string).
void sf_append_literal(const Column& column, size_t row, std::string& out);

}  // namespace skippr
