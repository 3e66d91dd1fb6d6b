// What a MySQL/MariaDB table is made of, read from information_schema: its columns, each with the family of values
// it holds and the Batch type it lands as, and its primary key. Both ways of reading a table produce each value in
// one text form per family (the form a SELECT of my_select_expression gives; the binlog decoder writes the same), so
// one appender turns either into a column value, and a row reads the same from a snapshot and from the binlog.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "clients/mariadb/maria_client.h"
#include "core/batch.h"
#include "core/connector.h"
#include "core/table_selection.h"

namespace skippr {

enum class MyFamily : uint8_t {
  kInt,       // TINYINT..BIGINT signed, INT UNSIGNED and smaller, YEAR: decimal text -> kInt64
  kUInt64,    // BIGINT UNSIGNED, BIT(64): decimal text -> kString (values beyond int64 stay exact)
  kDouble,    // FLOAT (widened exactly), DOUBLE: shortest round-trip text -> kDouble
  kDecimal,   // DECIMAL: its digits, with the column's scale -> kString (no Batch decimal type; text keeps every digit)
  kDate,      // 'YYYY-MM-DD' -> kDate; a zero date is NULL and a dead letter
  kDateTime,  // DATETIME, TIMESTAMP (read in UTC): 'YYYY-MM-DD HH:MM:SS[.ffffff]' -> kTimestamp
  kTime,      // '[-]HH:MM:SS[.f]' -> kString (it can be negative or above 24 hours)
  kText,      // CHAR, VARCHAR, TEXT, ENUM (its label), SET (its labels, comma-separated) -> kString
  kJson,      // MariaDB's JSON (a LONGTEXT with a json_valid check) and MySQL's -> kJson
  kBinary,    // BINARY, VARBINARY, BLOB, GEOMETRY (as WKB) -> kBinary
  kBit,       // BIT(1..63): decimal text -> kInt64
};

struct MyColumn {
  std::string name;
  std::string data_type;    // information_schema DATA_TYPE: int, varchar, enum, ...
  std::string column_type;  // COLUMN_TYPE: int(10) unsigned, enum('a','b'), ...
  MyFamily family = MyFamily::kText;
  Type type = Type::kString;
  bool is_unsigned = false;
  uint32_t fixed_binary_length = 0;  // BINARY(n): n (the binlog drops its trailing zero bytes)
  uint32_t time_fraction = 0;        // TIME(n): n, so the binlog's value is written with the same digits
};

struct MyTable {
  std::string schema, name, qualified;
  std::string stream;  // empty: the one table of a one-table source
  std::vector<MyColumn> columns;
  std::vector<std::string> key;
  const MyColumn* column(std::string_view name) const;
};

// Every table and view-less base table in the server the user can see, as (schema, table), in that order.
Result<std::vector<std::pair<std::string, std::string>>> my_list_tables(MariaConnection& conn);
// The table's columns and its key (`key` when given, else its primary key); kConfig when the table is missing, has no
// key (`key_needed_for` says why one is needed) or lacks a key column.
Status my_describe_table(MariaConnection& conn, MyTable& table, std::vector<std::string> key, std::string_view what,
                         std::string_view key_needed_for);

// The tables of `selection` on the server (several: a stream each; one: `selection.single()`), each described with
// my_describe_table.
Result<std::vector<MyTable>> my_selected_tables(MariaConnection& conn, const TableSelection& selection,
                                                const std::vector<std::string>& key, std::string_view what,
                                                std::string_view key_needed_for);

// The select-list expression of a column (aliased to its own name).
std::string my_select_expression(const MyColumn& column);
// SELECT <columns>, <ordering columns> FROM table [WHERE conditions AND (ordering) > (after)] ORDER BY ordering
// LIMIT limit: one page of a keyset read; `after` are the ordering values of the last row read, as the SELECT gave
// them.
std::string my_keyset_select_sql(MariaConnection& conn, const MyTable& table, const std::vector<std::string>& ordering,
                                 const std::vector<std::string>& after, size_t limit,
                                 const std::vector<std::string>& conditions = {});

// Appends one value in its family's text form (nullopt = NULL). A zero date lands as NULL with a dead letter saying
// so (where, column, row key). kBadInput naming the column when the text does not convert.
Status my_append_value(Column& column, const MyColumn& source, const std::optional<std::string>& text,
                       const MyTable& table, std::string_view what, std::vector<DeadLetter>& dead,
                       const std::string& row_key);
// "(k1, k2)" of a row for messages and dead letters.
std::string my_row_key(const MyTable& table, const std::vector<std::string>& names,
                       const std::vector<std::optional<std::string>>& values);

}  // namespace skippr

namespace skippr {

// Reads one page of `table` after `after` (ordering values of the last row read; updated) into `batch`, whose first
// columns are the table's; `per_row` appends the rest of each row (a CDC source's change fields). True when the table
// had no more rows (`after` then stays).
Result<bool> my_read_page(MariaConnection& conn, const MyTable& table, const std::vector<std::string>& ordering,
                          std::vector<std::string>& after, size_t limit, const std::vector<std::string>& conditions,
                          Batch& batch, std::vector<DeadLetter>& dead, std::string_view what,
                          const std::function<void(Batch&)>& per_row);

}  // namespace skippr
