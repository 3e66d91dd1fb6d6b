// How a batch's types land in PostgreSQL: the column type a new column gets, and which existing column types take a
// field (through an explicit cast from the staging table, so int/numeric/real/json columns work as well).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/batch.h"

namespace skippr {

// The type of a new column, and of the staging column binary COPY fills (their binary formats are what
// pg_copy_binary writes).
std::string_view pg_sql_type(Type type);

// Whether an existing column of `column_type` (as format_type() spells it, e.g. "timestamp with time zone",
// "numeric(12,2)", "character varying(20)") takes a field of `type` without a lossy or surprising conversion.
bool pg_column_accepts(std::string_view column_type, Type type);

// Why PostgreSQL cannot store `text` in a column of `column_type`: a NUL character in any text, or a \u0000 escape in
// JSON for a jsonb column. nullopt when it can.
std::optional<std::string> pg_text_problem(std::string_view column_type, std::string_view text);

}  // namespace skippr
