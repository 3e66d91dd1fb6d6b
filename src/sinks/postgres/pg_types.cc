#include "sinks/postgres/pg_types.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include <initializer_list>

#include "core/identifier_limit.h"

namespace skippr {

std::string_view pg_sql_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "boolean";
    case Type::kInt64:
      return "bigint";
    case Type::kDouble:
      return "double precision";
    case Type::kString:
      return "text";
    case Type::kBinary:
      return "bytea";
    case Type::kTimestamp:
      return "timestamp with time zone";
    case Type::kDate:
      return "date";
    case Type::kJson:
      return "jsonb";
  }
  return "text";
}

bool pg_column_accepts(std::string_view column_type, Type type) {
  auto starts = [&](std::initializer_list<std::string_view> prefixes) {
    for (auto p : prefixes) {
      if (column_type.starts_with(p)) return true;
    }
    return false;
  };
  switch (type) {
    case Type::kBool:
      return column_type == "boolean";
    // A too-large value for int/smallint fails the batch loudly (22003), it is never truncated.
    case Type::kInt64:
      return starts({"bigint", "integer", "smallint", "numeric"});
    case Type::kDouble:
      return starts({"double precision", "real", "numeric"});
    case Type::kString:
      return starts({"text", "character varying", "character"});
    case Type::kBinary:
      return column_type == "bytea";
    case Type::kTimestamp:
      return starts({"timestamp with time zone", "timestamp without time zone"});
    case Type::kDate:
      return column_type == "date";
    case Type::kJson:
      return column_type == "jsonb" || column_type == "json";
  }
  return false;
}

std::optional<std::string> pg_text_problem(std::string_view column_type, std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    return "contains a NUL character (\\u0000), which PostgreSQL text and JSON cannot hold";
  }
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    return "is not valid UTF-8, the encoding of the database's text";
  }
  if (column_type != "jsonb") return std::nullopt;
  // An escape is a \u0000 preceded by an even number of further backslashes (an odd one would escape the first).
  for (size_t at = text.find("\\u0000"); at != std::string_view::npos; at = text.find("\\u0000", at + 1)) {
    size_t backslashes = 0;
    while (at > backslashes && text[at - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return "contains \\u0000, which a PostgreSQL jsonb value cannot hold";
  }
  return std::nullopt;
}

std::string pg_derived_name(std::string_view table, std::string_view suffix) {
  return fit_identifier(table, kPgMaxNameBytes, suffix);
}

std::optional<double> pg_numeric_limit(std::string_view column_type) {
  int precision = 0, scale = 0;
  if (std::sscanf(std::string(column_type).c_str(), "numeric(%d,%d)", &precision, &scale) != 2) return std::nullopt;
  if (precision <= 0 || scale < 0 || scale > precision) return std::nullopt;
  // numeric(5,2) holds up to 999.99: 999.995 rounds to 1000.00 and overflows.
  return std::pow(10.0, precision - scale) - 0.5 * std::pow(10.0, -scale);
}

}  // namespace skippr
