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

// PostgreSQL cuts a name beyond 63 bytes silently, so two long names could meet: a name of our own for a table's
// companion (`<table>__skippr_rejected`) that would be longer keeps as much of the table's name as fits plus a hash
// of all of it.
inline constexpr size_t kPgMaxNameBytes = 63;
std::string pg_derived_name(std::string_view table, std::string_view suffix);

// The largest magnitude a numeric(p,s) column holds once a value is rounded to s digits (values from there on
// overflow it); nullopt for any other type (an unconstrained numeric included).
std::optional<double> pg_numeric_limit(std::string_view column_type);

}  // namespace skippr
