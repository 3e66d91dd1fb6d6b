#include "sources/postgres/pg_table_reader.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

namespace skippr {

Result<std::vector<PgSourceColumn>> pg_describe_source_table(PgConnection& conn, const std::string& qualified,
                                                             std::string_view what) {
  auto exists = conn.query("SELECT to_regclass($1) IS NOT NULL", {qualified});
  if (!exists) return std::unexpected(exists.error());
  if (exists->rows.at(0).at(0) != "t") {
    return fail(ErrorKind::kConfig, fmt::format("{}: table {} does not exist (or is not visible to this user); check "
                                                "`tables` in skippr.yml",
                                                what, qualified));
  }
  auto rows = conn.query(
      "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = to_regclass($1) "
      "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
      {qualified});
  if (!rows) return std::unexpected(rows.error());
  std::vector<PgSourceColumn> columns;
  for (auto& row : rows->rows) {
    PgSourceColumn c{row[0].value_or(""), row[1].value_or(""), Type::kString};
    c.type = pg_source_type(c.pg_type);
    columns.push_back(std::move(c));
  }
  return columns;
}

Result<std::vector<std::string>> pg_primary_key(PgConnection& conn, const std::string& qualified) {
  auto rows = conn.query(
      "SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) JOIN "
      "pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE i.indrelid = to_regclass($1) AND "
      "i.indisprimary ORDER BY k.n",
      {qualified});
  if (!rows) return std::unexpected(rows.error());
  std::vector<std::string> key;
  for (auto& row : rows->rows) key.push_back(row[0].value_or(""));
  return key;
}

Type pg_source_type(std::string_view t) {
  if (t == "bigint" || t == "integer" || t == "smallint") return Type::kInt64;
  if (t == "double precision" || t == "real") return Type::kDouble;
  if (t == "boolean") return Type::kBool;
  if (t == "bytea") return Type::kBinary;
  if (t.starts_with("timestamp")) return Type::kTimestamp;
  if (t == "date") return Type::kDate;
  if (t == "json" || t == "jsonb") return Type::kJson;
  return Type::kString;
}

std::string pg_select_expression(const PgSourceColumn& c) {
  const std::string name = pg_quote_identifier(c.name);
  switch (c.type) {
    // timestamp without time zone is taken as UTC.
    case Type::kTimestamp:
      return fmt::format("(extract(epoch FROM {0}) * 1000000)::bigint AS {0}", name);
    case Type::kDate:
      return fmt::format("({0} - date '1970-01-01') AS {0}", name);
    case Type::kDouble:
      return fmt::format("{0}::float8 AS {0}", name);
    case Type::kString:
      return fmt::format("{0}::text AS {0}", name);
    default:
      return name;
  }
}

namespace {
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Status pg_append_text_value(Column& column, const std::optional<std::string>& text) {
  if (!text) {
    column.append_null();
    return ok();
  }
  const std::string& v = *text;
  switch (column.type) {
    case Type::kBool:
      column.append_bool(v == "t");
      return ok();
    case Type::kInt64:
    case Type::kTimestamp:
    case Type::kDate: {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size()) {
        return fail(ErrorKind::kBadInput, fmt::format("'{}' is not an integer value", v));
      }
      column.append_int(n);
      return ok();
    }
    case Type::kDouble:
      column.append_double(std::strtod(v.c_str(), nullptr));
      return ok();         // NaN/Infinity too
    case Type::kBinary: {  // bytea_output = hex: \x0a1b...
      if (!v.starts_with("\\x") || v.size() % 2 != 0) return fail(ErrorKind::kBadInput, "bytea is not in hex format");
      std::string bytes;
      bytes.reserve(v.size() / 2 - 1);
      for (size_t i = 2; i < v.size(); i += 2) {
        const int hi = hex_digit(v[i]), lo = hex_digit(v[i + 1]);
        if (hi < 0 || lo < 0) return fail(ErrorKind::kBadInput, "bytea is not in hex format");
        bytes.push_back(static_cast<char>(hi * 16 + lo));
      }
      column.append_string(bytes);
      return ok();
    }
    case Type::kString:
    case Type::kJson:
      column.append_string(v);
      return ok();
  }
  return ok();
}

}  // namespace skippr
