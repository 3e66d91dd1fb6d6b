#include "sinks/databricks/dbx_types.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "clients/databricks/databricks_client.h"

namespace skippr {
namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "decimal(38,0)" -> "DECIMAL"
std::string base_type(std::string_view type) { return upper(type.substr(0, type.find('('))); }

bool one_of(std::string_view type, std::initializer_list<std::string_view> names) {
  const std::string base = base_type(type);
  for (auto n : names) {
    if (base == n) return true;
  }
  return false;
}

bool accepts(std::string_view column_type, Type type) {
  switch (type) {
    case Type::kBool:
      return one_of(column_type, {"BOOLEAN"});
    case Type::kInt64:
      return one_of(column_type,
                    {"BIGINT", "LONG", "INT", "INTEGER", "SMALLINT", "SHORT", "TINYINT", "BYTE", "DECIMAL"});
    case Type::kDouble:
      return one_of(column_type, {"DOUBLE"});
    case Type::kString:
      return one_of(column_type, {"STRING", "VARCHAR", "CHAR"});
    case Type::kBinary:
      return one_of(column_type, {"BINARY"});
    case Type::kTimestamp:
      return one_of(column_type, {"TIMESTAMP", "TIMESTAMP_NTZ"});
    case Type::kDate:
      return one_of(column_type, {"DATE"});
    case Type::kJson:
      return one_of(column_type, {"STRING", "VARIANT"});
  }
  return false;
}

std::optional<std::pair<int64_t, int64_t>> int_range(std::string_view column_type) {
  if (one_of(column_type, {"INT", "INTEGER"})) {
    return std::pair<int64_t, int64_t>{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  }
  if (one_of(column_type, {"SMALLINT", "SHORT"})) return std::pair<int64_t, int64_t>{-32768, 32767};
  if (one_of(column_type, {"TINYINT", "BYTE"})) return std::pair<int64_t, int64_t>{-128, 127};
  return std::nullopt;
}

// DECIMAL(p,s) holds magnitudes below 10^(p-s); DECIMAL alone is DECIMAL(10,0).
std::optional<double> magnitude_limit(std::string_view column_type) {
  if (!one_of(column_type, {"DECIMAL"})) return std::nullopt;
  int precision = 10, scale = 0;
  if (auto open = column_type.find('('); open != std::string_view::npos) {
    std::sscanf(std::string(column_type.substr(open)).c_str(), "(%d,%d)", &precision, &scale);
  }
  return std::pow(10.0, precision - scale);
}

// VARCHAR(n) and CHAR(n) hold at most n characters: a longer value goes to the rejects table instead of failing the
// whole COPY INTO.
std::optional<std::string> text_problem(std::string_view column_type, std::string_view text) {
  if (!one_of(column_type, {"VARCHAR", "CHAR"})) return std::nullopt;
  const auto open = column_type.find('(');
  if (open == std::string_view::npos) return std::nullopt;
  const size_t limit = std::strtoul(std::string(column_type.substr(open + 1)).c_str(), nullptr, 10);
  size_t characters = 0;
  for (unsigned char c : text) characters += (c & 0xC0) != 0x80 ? 1 : 0;  // UTF-8 lead bytes
  if (limit == 0 || characters <= limit) return std::nullopt;
  return fmt::format("{} characters, above the column's {}", characters, limit);
}

}  // namespace

std::string dbx_new_column_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "BOOLEAN";
    case Type::kInt64:
      return "BIGINT";
    case Type::kDouble:
      return "DOUBLE";
    case Type::kString:
    case Type::kJson:
      return "STRING";
    case Type::kBinary:
      return "BINARY";
    case Type::kTimestamp:
      return "TIMESTAMP";
    case Type::kDate:
      return "DATE";
  }
  return "STRING";
}

ColumnRules dbx_column_rules() {
  ColumnRules rules{[](std::string_view a, std::string_view b) { return upper(a) == upper(b); }, accepts,
                    dbx_quote_identifier};
  rules.int_range = int_range;
  rules.magnitude_limit = magnitude_limit;
  rules.text_problem = text_problem;
  return rules;
}

std::string dbx_convert(std::string_view value, std::string_view column_type) {
  if (one_of(column_type, {"STRING", "VARCHAR", "CHAR"})) return std::string(value);
  if (one_of(column_type, {"BINARY"})) return fmt::format("unbase64({})", value);
  if (one_of(column_type, {"VARIANT"})) return fmt::format("parse_json({})", value);
  return fmt::format("CAST({} AS {})", value, upper(column_type));
}

}  // namespace skippr
