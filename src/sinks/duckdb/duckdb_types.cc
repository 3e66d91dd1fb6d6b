#include "sinks/duckdb/duckdb_types.h"

#include <algorithm>
#include <cctype>

#include <simdjson.h>

#include "clients/duckdb/duckdb_client.h"

namespace skippr {

bool duckdb_column_accepts(std::string_view column_data_type, Type type) {
  const std::string_view t = column_data_type;
  switch (type) {
    case Type::kBool:
      return t == "BOOLEAN";
    case Type::kInt64:
      return t == "BIGINT";
    case Type::kDouble:
      return t == "DOUBLE";
    case Type::kString:
      return t == "VARCHAR";
    case Type::kBinary:
      return t == "BLOB";
    // A user's TIMESTAMP column stores the same microseconds; it reads them as UTC wall-clock time.
    case Type::kTimestamp:
      return t == "TIMESTAMP WITH TIME ZONE" || t == "TIMESTAMP";
    case Type::kDate:
      return t == "DATE";
    case Type::kJson:
      return t == "JSON" || t == "VARCHAR";
  }
  return false;
}

bool duckdb_same_identifier(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return std::tolower(uint8_t(x)) == std::tolower(uint8_t(y)); });
}

// DuckDB's VARCHAR and JSON must be valid UTF-8; a value that is not rejects its row (sources keep most such bytes
// out already: JSON parsers and the CSV reader refuse them).
std::optional<std::string> duckdb_text_problem(std::string_view, std::string_view text) {
  if (simdjson::validate_utf8(text.data(), text.size())) return std::nullopt;
  return "is not valid UTF-8, which DuckDB text requires";
}

ColumnRules duckdb_column_rules() {
  return {duckdb_same_identifier, duckdb_column_accepts, quote_identifier, {}, duckdb_text_problem};
}

}  // namespace skippr
