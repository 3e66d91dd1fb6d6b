#include "sources/postgres/pg_table_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "core/time_util.h"

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

Result<bool> pg_key_is_unique(PgConnection& conn, const std::string& qualified, const std::vector<std::string>& key) {
  auto rows = conn.query(
      "SELECT array_to_json(ARRAY(SELECT a.attname FROM unnest(i.indkey) AS k(attnum) JOIN pg_attribute a ON "
      "a.attrelid = i.indrelid AND a.attnum = k.attnum))::text FROM pg_index i WHERE i.indrelid = to_regclass($1) AND "
      "i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL",
      {qualified});
  if (!rows) return std::unexpected(rows.error());
  for (const auto& row : rows->rows) {
    auto columns = nlohmann::json::parse(row.at(0).value_or("[]"), nullptr, false);
    if (!columns.is_array() || columns.empty()) continue;
    const bool within_key = std::ranges::all_of(columns, [&](const nlohmann::json& c) {
      return c.is_string() && std::ranges::find(key, c.get<std::string>()) != key.end();
    });
    if (within_key) return true;
  }
  return false;
}

Result<PgKeyedTable> pg_describe_keyed_table(PgConnection& conn, const std::string& qualified,
                                             std::vector<std::string> key, std::string_view what,
                                             std::string_view key_needed_for) {
  PgKeyedTable table;
  auto columns = pg_describe_source_table(conn, qualified, what);
  if (!columns) return std::unexpected(columns.error());
  table.columns = std::move(*columns);
  if (key.empty()) {
    auto primary = pg_primary_key(conn, qualified);
    if (!primary) return std::unexpected(primary.error());
    key = std::move(*primary);
  }
  if (key.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: table {} has no primary key, which {}; add one, or set "
                                                "primary_key on the pipeline",
                                                what, qualified, key_needed_for));
  }
  for (const auto& name : key) {
    if (std::ranges::none_of(table.columns, [&](const PgSourceColumn& c) { return c.name == name; })) {
      return fail(ErrorKind::kConfig, fmt::format("{}: table {} has no column {} (named in primary_key); check "
                                                  "skippr.yml",
                                                  what, qualified, pg_quote_identifier(name)));
    }
  }
  table.key = std::move(key);
  return table;
}

Status pg_append_row(Batch& batch, const std::vector<PgSourceColumn>& columns,
                     const std::vector<std::optional<std::string>>& row, std::string_view what,
                     std::string_view qualified, std::vector<DeadLetter>& dead) {
  for (size_t c = 0; c < columns.size(); ++c) {
    if (auto st = pg_append_text_value(batch.columns[c], row[c]); !st) {
      if (!pg_is_infinite(batch.columns[c].type, row[c])) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("{}: column {} of {}: {}", what, pg_quote_identifier(columns[c].name), qualified,
                                st.error().message));
      }
      batch.columns[c].append_null();
      std::vector<std::string> key;
      for (size_t i = columns.size(); i < row.size(); ++i) key.push_back(row[i].value_or(""));
      dead.push_back(pg_infinite_dead_letter(qualified, columns[c], *row[c], nlohmann::json{{"key", key}}));
    }
  }
  return ok();
}

bool pg_is_infinite(Type type, const std::optional<std::string>& text) {
  return (type == Type::kTimestamp || type == Type::kDate) && text && (*text == "infinity" || *text == "-infinity");
}

DeadLetter pg_infinite_dead_letter(std::string_view qualified, const PgSourceColumn& column, std::string_view text,
                                   const nlohmann::json& row) {
  nlohmann::json raw = row;
  raw["column"] = column.name;
  raw["value"] = text;
  return DeadLetter{std::string(qualified), 0,
                    fmt::format("column {} ({}) is '{}', which no destination timestamp or date can hold: the row "
                                "landed with NULL in that column",
                                pg_quote_identifier(column.name), column.pg_type, text),
                    raw.dump()};
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
      return fmt::format(
          "CASE WHEN isfinite({0}) THEN (extract(epoch FROM {0}) * 1000000)::bigint::text ELSE {0}::text END AS {0}",
          name);
    case Type::kDate:
      return fmt::format("CASE WHEN isfinite({0}) THEN ({0} - date '1970-01-01')::text ELSE {0}::text END AS {0}",
                         name);
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

Status pg_append_output_text(Column& column, const PgSourceColumn& source, const std::optional<std::string>& text) {
  if (!text) {
    column.append_null();
    return ok();
  }
  switch (column.type) {
    case Type::kTimestamp:
    case Type::kDate: {
      // "2024-03-01 00:00:00.5+00" (timestamptz in UTC), "2024-03-01 00:00:00.5" (taken as UTC), "2024-03-01".
      auto micros = parse_iso8601_micros(*text);
      if (!micros) return fail(ErrorKind::kBadInput, fmt::format("'{}' is not a {} value", *text, source.pg_type));
      column.append_int(column.type == Type::kDate ? *micros / (86400LL * 1000000) : *micros);
      return ok();
    }
    case Type::kDouble:
      // A real prints its shortest float form; widening the float (as ::float8 does) gives the snapshot's value.
      column.append_double(source.pg_type == "real" ? static_cast<double>(std::strtof(text->c_str(), nullptr))
                                                    : std::strtod(text->c_str(), nullptr));
      return ok();
    case Type::kString:
      // character(n) prints its padding; ::text (the snapshot's form) drops trailing blanks.
      if (source.pg_type.starts_with("character(") || source.pg_type == "character") {
        const size_t end = text->find_last_not_of(' ');
        return pg_append_text_value(column, text->substr(0, end == std::string::npos ? 0 : end + 1));
      }
      return pg_append_text_value(column, text);
    default:
      return pg_append_text_value(column, text);
  }
}

std::string pg_keyset_select_sql(const std::string& qualified, const std::vector<PgSourceColumn>& columns,
                                 const std::vector<std::string>& ordering, bool resume, size_t limit,
                                 const std::vector<std::string>& conditions) {
  std::vector<std::string> select, order, ordering_text, params;
  for (const auto& c : columns) select.push_back(pg_select_expression(c));
  for (size_t i = 0; i < ordering.size(); ++i) {
    auto column = std::ranges::find_if(columns, [&](const PgSourceColumn& c) { return c.name == ordering[i]; });
    // Qualified by the table's alias: the select list's aliases share the names (ORDER BY would be ambiguous).
    const std::string name = "t." + pg_quote_identifier(ordering[i]);
    order.push_back(name);
    ordering_text.push_back(fmt::format("{}::text", name));
    params.push_back(fmt::format("${}::{}", i + 1, column->pg_type));
  }
  // A row comparison, so the resume is exact whatever number of rows share the leading values.
  std::vector<std::string> where = conditions;
  if (resume) where.push_back(fmt::format("({}) > ({})", fmt::join(order, ", "), fmt::join(params, ", ")));
  const std::string where_sql = where.empty() ? "" : fmt::format(" WHERE {}", fmt::join(where, " AND "));
  return fmt::format("SELECT {}, {} FROM {} t{} ORDER BY {} LIMIT {}", fmt::join(select, ", "),
                     fmt::join(ordering_text, ", "), qualified, where_sql, fmt::join(order, ", "), limit);
}

}  // namespace skippr
