#include "sinks/snowflake/sf_types.h"

#include <fmt/format.h>

#include <charconv>

#include "clients/snowflake/snowflake_client.h"
#include "core/time_util.h"

namespace skippr {
namespace {

// "NUMBER(38,0)" -> "NUMBER"
std::string_view base_type(std::string_view type) { return type.substr(0, type.find('(')); }

bool one_of(std::string_view type, std::initializer_list<std::string_view> names) {
  for (auto n : names) {
    if (base_type(type) == n) return true;
  }
  return false;
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

}  // namespace

std::string sf_new_column_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "BOOLEAN";
    case Type::kInt64:
      return "NUMBER(38,0)";
    case Type::kDouble:
      return "FLOAT";
    case Type::kString:
      return "VARCHAR";
    case Type::kBinary:
      return "BINARY";
    case Type::kTimestamp:
      return "TIMESTAMP_NTZ(6)";
    case Type::kDate:
      return "DATE";
    case Type::kJson:
      return "VARIANT";
  }
  return "VARCHAR";
}

bool sf_column_accepts(std::string_view column_type, Type type) {
  switch (type) {
    case Type::kBool:
      return one_of(column_type, {"BOOLEAN"});
    case Type::kInt64:
      return one_of(column_type, {"NUMBER", "DECIMAL", "NUMERIC", "INT", "INTEGER", "BIGINT"});
    case Type::kDouble:
      return one_of(column_type, {"FLOAT", "DOUBLE", "REAL", "FLOAT8"});
    case Type::kString:
      return one_of(column_type, {"TEXT", "VARCHAR", "STRING"});
    case Type::kBinary:
      return one_of(column_type, {"BINARY", "VARBINARY"});
    case Type::kTimestamp:
      return one_of(column_type, {"TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "TIMESTAMP_TZ", "TIMESTAMP", "DATETIME"});
    case Type::kDate:
      return one_of(column_type, {"DATE"});
    case Type::kJson:
      return one_of(column_type, {"VARIANT", "OBJECT", "ARRAY"});
  }
  return false;
}

std::string sf_convert(std::string_view value, std::string_view column_type, std::string_view binary_format) {
  if (one_of(column_type, {"VARIANT", "OBJECT", "ARRAY"})) return fmt::format("PARSE_JSON({})", value);
  if (one_of(column_type, {"BINARY", "VARBINARY"})) return fmt::format("TO_BINARY({}, '{}')", value, binary_format);
  if (one_of(column_type, {"TEXT", "VARCHAR", "STRING"})) return std::string(value);
  return fmt::format("CAST({} AS {})", value, base_type(column_type) == "NUMBER" ? "NUMBER(38,0)" : column_type);
}

void sf_append_literal(const Column& column, size_t row, std::string& out) {
  if (!column.is_valid(row)) {
    out += "NULL";
    return;
  }
  switch (column.type) {
    case Type::kBool:
      out += column.int_at(row) ? "'true'" : "'false'";
      return;
    case Type::kInt64:
      out += fmt::format("'{}'", column.int_at(row));
      return;
    case Type::kDouble:
      out += fmt::format("'{}'", column.double_at(row));
      return;
    case Type::kTimestamp:
      // "2024-01-01T00:00:00.000000Z": the zone travels, so a TIMESTAMP_LTZ/TZ column gets the instant whatever
      // the session's TIMEZONE, and TIMESTAMP_NTZ the UTC wall time.
      out += '\'' + format_iso8601_micros(column.int_at(row)) + '\'';
      return;
    case Type::kDate:
      out += '\'' + format_date(column.int_at(row)) + '\'';
      return;
    case Type::kBinary:
      out += '\'' + hex(column.string_at(row)) + '\'';
      return;
    case Type::kString:
    case Type::kJson:
      out += sf_quote_literal(column.string_at(row));
      return;
  }
}

}  // namespace skippr
