#include "sources/mysql/mysql_catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "core/time_util.h"

namespace skippr {
namespace {

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

uint32_t parenthesised_number(std::string_view column_type) {
  const auto open = column_type.find('(');
  if (open == std::string_view::npos) return 0;
  uint32_t n = 0;
  std::from_chars(column_type.data() + open + 1, column_type.data() + column_type.size(), n);
  return n;
}

// The family of a column from information_schema (DATA_TYPE, COLUMN_TYPE, CHARACTER_SET_NAME) and whether a
// json_valid check (MariaDB's JSON) covers it.
void classify(MyColumn& c, const std::optional<std::string>& charset, bool json_checked) {
  const std::string& t = c.data_type;
  c.is_unsigned = contains(c.column_type, "unsigned");
  if (t == "tinyint" || t == "smallint" || t == "mediumint" || t == "int" || t == "year") {
    c.family = MyFamily::kInt;
  } else if (t == "bigint") {
    c.family = c.is_unsigned ? MyFamily::kUInt64 : MyFamily::kInt;
  } else if (t == "float" || t == "double" || t == "real") {
    c.family = MyFamily::kDouble;
  } else if (t == "decimal" || t == "numeric") {
    c.family = MyFamily::kDecimal;
  } else if (t == "date") {
    c.family = MyFamily::kDate;
  } else if (t == "datetime" || t == "timestamp") {
    c.family = MyFamily::kDateTime;
  } else if (t == "time") {
    c.family = MyFamily::kTime;
    c.time_fraction = parenthesised_number(c.column_type);
  } else if (t == "bit") {
    c.family = parenthesised_number(c.column_type) >= 64 ? MyFamily::kUInt64 : MyFamily::kBit;
  } else if (t == "json") {
    c.family = MyFamily::kJson;
  } else if (t == "binary" || t == "varbinary" || t == "tinyblob" || t == "blob" || t == "mediumblob" ||
             t == "longblob" || t == "geometry" || t == "point" || t == "linestring" || t == "polygon" ||
             t == "multipoint" || t == "multilinestring" || t == "multipolygon" || t == "geometrycollection") {
    c.family = MyFamily::kBinary;
    if (t == "binary") c.fixed_binary_length = parenthesised_number(c.column_type);
  } else if ((t == "char" || t == "varchar" || t.ends_with("text")) && charset.value_or("") == "binary") {
    c.family = MyFamily::kBinary;
  } else if (t == "longtext" && json_checked) {
    c.family = MyFamily::kJson;
  } else {
    c.family = MyFamily::kText;  // char, varchar, *text, enum, set, and anything newer read as its text
  }
  switch (c.family) {
    case MyFamily::kInt:
    case MyFamily::kBit:
      c.type = Type::kInt64;
      break;
    case MyFamily::kDouble:
      c.type = Type::kDouble;
      break;
    case MyFamily::kDate:
      c.type = Type::kDate;
      break;
    case MyFamily::kDateTime:
      c.type = Type::kTimestamp;
      break;
    case MyFamily::kJson:
      c.type = Type::kJson;
      break;
    case MyFamily::kBinary:
      c.type = Type::kBinary;
      break;
    default:
      c.type = Type::kString;
  }
}

bool is_geometry(const std::string& t) {
  return t == "geometry" || t == "point" || t == "linestring" || t == "polygon" || t == "multipoint" ||
         t == "multilinestring" || t == "multipolygon" || t == "geometrycollection";
}

// A zero date or datetime ('0000-00-00', '2024-00-10'): MySQL allows them, no destination type holds them.
bool is_zero_date(std::string_view text) {
  return text.size() >= 10 && (text.substr(0, 4) == "0000" || text.substr(5, 2) == "00" || text.substr(8, 2) == "00");
}

}  // namespace

const MyColumn* MyTable::column(std::string_view name) const {
  auto it = std::ranges::find_if(columns, [&](const MyColumn& c) { return c.name == name; });
  return it == columns.end() ? nullptr : &*it;
}

Result<std::vector<std::pair<std::string, std::string>>> my_list_tables(MariaConnection& conn) {
  auto rows = conn.query(
      "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND "
      "TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY 1, 2");
  if (!rows) return std::unexpected(rows.error());
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& row : rows->rows) out.emplace_back(row[0].value_or(""), row[1].value_or(""));
  return out;
}

Status my_describe_table(MariaConnection& conn, MyTable& table, std::vector<std::string> key, std::string_view what,
                         std::string_view key_needed_for) {
  const std::string where =
      fmt::format("TABLE_SCHEMA = {} AND TABLE_NAME = {}", conn.quote(table.schema), conn.quote(table.name));
  auto rows = conn.query(
      "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_SET_NAME, COLUMN_KEY FROM information_schema.COLUMNS "
      "WHERE " +
      where + " ORDER BY ORDINAL_POSITION");
  if (!rows) return std::unexpected(rows.error());
  if (rows->rows.empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: table {}.{} does not exist (or this user cannot see it); fix tables", what,
                            table.schema, table.name));
  }
  // MariaDB's JSON is LONGTEXT with a CHECK (json_valid(`col`)); information_schema.CHECK_CONSTRAINTS names it.
  std::vector<std::string> json_checks;
  if (auto checks = conn.query(fmt::format("SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE "
                                           "CONSTRAINT_SCHEMA = {} AND TABLE_NAME = {}",
                                           conn.quote(table.schema), conn.quote(table.name)))) {
    for (const auto& row : checks->rows) json_checks.push_back(row[0].value_or(""));
  }
  table.columns.clear();
  std::vector<std::string> primary;
  for (const auto& row : rows->rows) {
    MyColumn c;
    c.name = row[0].value_or("");
    c.data_type = row[1].value_or("");
    c.column_type = row[2].value_or("");
    const bool json_checked = std::ranges::any_of(json_checks, [&](const std::string& clause) {
      return clause == "json_valid(" + maria_quote_identifier(c.name) + ")";
    });
    classify(c, row[3], json_checked);
    table.columns.push_back(std::move(c));
  }
  auto pk = conn.query("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE " + where +
                       " AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION");
  if (!pk) return std::unexpected(pk.error());
  for (const auto& row : pk->rows) primary.push_back(row[0].value_or(""));
  table.key = key.empty() ? primary : std::move(key);
  if (table.key.empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: table {}.{} has no primary key, and one {}; add a primary key to the table or "
                            "name the columns as the pipeline's primary_key",
                            what, table.schema, table.name, key_needed_for));
  }
  for (const auto& k : table.key) {
    if (!table.column(k)) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: table {}.{} has no column {} (named as primary_key); check skippr.yml", what,
                              table.schema, table.name, k));
    }
  }
  return ok();
}

Result<std::vector<MyTable>> my_selected_tables(MariaConnection& conn, const TableSelection& selection,
                                                const std::vector<std::string>& key, std::string_view what,
                                                std::string_view key_needed_for) {
  const bool several = selection.names_streams();
  std::vector<SelectedTable> selected;
  if (several) {
    auto on_server = my_list_tables(conn);
    if (!on_server) return std::unexpected(on_server.error());
    auto chosen = select_tables_from(*on_server, selection, what);
    if (!chosen) return std::unexpected(chosen.error());
    selected = std::move(*chosen);
  } else {
    selected.push_back(selection.single());
  }
  std::vector<MyTable> out;
  for (auto& s : selected) {
    MyTable& table = out.emplace_back();
    table.schema = s.schema;
    table.name = s.table;
    table.qualified = maria_qualified(s.schema, s.table);
    table.stream = several ? s.stream : "";
    SKIPPR_TRY(my_describe_table(conn, table, key, what, key_needed_for));
  }
  return out;
}

std::string my_select_expression(const MyColumn& c) {
  const std::string name = maria_quote_identifier(c.name);
  if (is_geometry(c.data_type)) return fmt::format("ST_AsBinary({0}) AS {0}", name);
  if (c.data_type == "float") return fmt::format("CAST({0} AS DOUBLE) AS {0}", name);
  if (c.data_type == "bit") return fmt::format("CAST({0} AS UNSIGNED) AS {0}", name);
  return name;
}

std::string my_keyset_select_sql(MariaConnection& conn, const MyTable& table, const std::vector<std::string>& ordering,
                                 const std::vector<std::string>& after, size_t limit,
                                 const std::vector<std::string>& conditions) {
  std::vector<std::string> select;
  for (const auto& c : table.columns) select.push_back(my_select_expression(c));
  std::vector<std::string> order;
  for (size_t i = 0; i < ordering.size(); ++i) {
    order.push_back(maria_quote_identifier(ordering[i]));
    // A binary key is kept in the position as hex (its bytes are no text a JSON position can hold).
    const MyColumn* c = table.column(ordering[i]);
    const bool binary = c && c->family == MyFamily::kBinary;
    select.push_back(binary ? fmt::format("HEX({}) AS `_skippr_k{}`", order.back(), i)
                            : fmt::format("{} AS `_skippr_k{}`", order.back(), i));
  }
  std::vector<std::string> where = conditions;
  if (!after.empty()) {
    std::vector<std::string> literals;
    for (size_t i = 0; i < after.size(); ++i) {
      const MyColumn* c = table.column(ordering[i]);
      // A binary key compares byte by byte: a hex literal keeps it binary whatever the connection's charset.
      if (c && c->family == MyFamily::kBinary) {
        const bool is_hex =
            std::ranges::all_of(after[i], [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); });
        literals.push_back(is_hex ? "X'" + after[i] + "'" : conn.quote(after[i]));
      } else {
        literals.push_back(conn.quote(after[i]));
      }
    }
    where.push_back(fmt::format("({}) > ({})", fmt::join(order, ", "), fmt::join(literals, ", ")));
  }
  return fmt::format("SELECT {} FROM {}{}{} ORDER BY {} LIMIT {}", fmt::join(select, ", "), table.qualified,
                     where.empty() ? "" : " WHERE ", fmt::join(where, " AND "), fmt::join(order, ", "), limit);
}

std::string my_row_key(const MyTable& table, const std::vector<std::string>& names,
                       const std::vector<std::optional<std::string>>& values) {
  std::vector<std::string> parts;
  for (const auto& k : table.key) {
    auto it = std::ranges::find(names, k);
    const size_t i = static_cast<size_t>(it - names.begin());
    parts.push_back(
        fmt::format("{}={}", k, it == names.end() || i >= values.size() ? "?" : values[i].value_or("NULL")));
  }
  return fmt::format("({})", fmt::join(parts, ", "));
}

Status my_append_value(Column& column, const MyColumn& source, const std::optional<std::string>& text,
                       const MyTable& table, std::string_view what, std::vector<DeadLetter>& dead,
                       const std::string& row_key) {
  if (!text) {
    column.append_null();
    return ok();
  }
  const std::string& v = *text;
  auto bad = [&] {
    return fail(ErrorKind::kBadInput,
                fmt::format("{}: {}.{} column {} ({}) of row {}: cannot read '{}'", what, table.schema, table.name,
                            source.name, source.column_type, row_key, v.substr(0, 64)));
  };
  switch (source.type) {
    case Type::kInt64: {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size()) return bad();
      column.append_int(n);
      return ok();
    }
    case Type::kDouble: {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end != v.c_str() + v.size()) return bad();
      column.append_double(d);
      return ok();
    }
    case Type::kDate:
    case Type::kTimestamp: {
      if (is_zero_date(v)) {
        column.append_null();
        dead.push_back(DeadLetter{fmt::format("{}.{}", table.schema, table.name), 0,
                                  fmt::format("column {} holds the zero date '{}', which no destination type holds; "
                                              "it landed as NULL",
                                              source.name, v),
                                  nlohmann::json{{"key", row_key}, {"column", source.name}, {"value", v}}.dump()});
        return ok();
      }
      auto micros = parse_iso8601_micros(v);
      if (!micros) return bad();
      if (source.type == Type::kTimestamp) {
        column.append_int(*micros);
      } else {
        const int64_t day = 86400LL * 1000000;
        column.append_int(*micros >= 0 ? *micros / day : -((-*micros + day - 1) / day));
      }
      return ok();
    }
    default:
      column.append_string(v);
      return ok();
  }
}

}  // namespace skippr

namespace skippr {

Result<bool> my_read_page(MariaConnection& conn, const MyTable& table, const std::vector<std::string>& ordering,
                          std::vector<std::string>& after, size_t limit, const std::vector<std::string>& conditions,
                          Batch& batch, std::vector<DeadLetter>& dead, std::string_view what,
                          const std::function<void(Batch&)>& per_row) {
  auto rows = conn.query(my_keyset_select_sql(conn, table, ordering, after, limit, conditions));
  if (!rows) {
    return fail(rows.error().kind,
                fmt::format("{}: reading {}.{}: {}", what, table.schema, table.name, rows.error().message));
  }
  std::vector<std::string> names;
  for (const auto& c : table.columns) names.push_back(c.name);
  const size_t dead_before = dead.size();
  for (const auto& row : rows->rows) {
    const std::string key = my_row_key(table, names, row);
    for (size_t c = 0; c < table.columns.size(); ++c) {
      SKIPPR_TRY(my_append_value(batch.columns[c], table.columns[c], row[c], table, what, dead, key));
    }
    if (per_row) per_row(batch);
    batch.rows += 1;
  }
  for (size_t i = dead_before; i < dead.size(); ++i) dead[i].stream = batch.stream;
  if (!rows->rows.empty()) {
    const auto& last = rows->rows.back();
    after.clear();
    for (size_t i = 0; i < ordering.size(); ++i) after.push_back(last[table.columns.size() + i].value_or(""));
  }
  return rows->rows.size() < limit;
}

}  // namespace skippr
