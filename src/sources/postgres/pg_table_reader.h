// Reading a PostgreSQL table into Batches: which columns it has, what Type each becomes, and the SELECT list that
// makes the server send every value in a text form that converts exactly (timestamps as epoch microseconds, dates as
// epoch days, bytea as hex).
#pragma once

#include <string>
#include <vector>

#include "clients/postgres/pg_client.h"
#include "core/batch.h"

namespace skippr {

struct PgSourceColumn {
  std::string name;
  std::string pg_type;  // format_type()
  Type type = Type::kString;
};

// The table's columns, or kConfig naming the table when it does not exist.
Result<std::vector<PgSourceColumn>> pg_describe_source_table(PgConnection& conn, const std::string& qualified,
                                                             std::string_view what);
// The table's primary key columns, in key order (empty when it has none).
Result<std::vector<std::string>> pg_primary_key(PgConnection& conn, const std::string& qualified);

// True when a primary key or a valid, non-partial unique index on plain columns covers only columns of `key`, so no
// two rows can share the key's values (rows with NULL in a key column aside, which no merging sink accepts).
Result<bool> pg_key_is_unique(PgConnection& conn, const std::string& qualified, const std::vector<std::string>& key);

struct PgKeyedTable {
  std::vector<PgSourceColumn> columns;
  std::vector<std::string> key;
};
// The table's columns and its key: `key` when the pipeline names one, else the table's primary key. kConfig when the
// table is missing, has no key (`key_needed_for` says why one is needed), or lacks a key column.
Result<PgKeyedTable> pg_describe_keyed_table(PgConnection& conn, const std::string& qualified,
                                             std::vector<std::string> key, std::string_view what,
                                             std::string_view key_needed_for);

// `numeric` is read as text: Batch has no decimal type, and text keeps every digit.
Type pg_source_type(std::string_view pg_type);
// The select-list expression for a column (aliased to its own name). An infinite timestamp or date comes as its
// text ('infinity'), which has no integer form.
std::string pg_select_expression(const PgSourceColumn& column);
// Appends one text value (from the expression above; nullopt = NULL) to `column`.
Status pg_append_text_value(Column& column, const std::optional<std::string>& text);
// Appends the first columns.size() values of `row` (select-list text forms) to the batch's first columns; kBadInput
// naming the column and table when one does not convert. The caller counts the row. A timestamp or date that is
// 'infinity' or '-infinity' (no destination type holds it) lands as NULL, and a dead letter in `dead` says so; the
// row's values after columns.size() (its ordering columns) name it there.
Status pg_append_row(Batch& batch, const std::vector<PgSourceColumn>& columns,
                     const std::vector<std::optional<std::string>>& row, std::string_view what,
                     std::string_view qualified, std::vector<DeadLetter>& dead);

// True for PostgreSQL's 'infinity' / '-infinity' in a timestamp or date column (both the output and select forms).
bool pg_is_infinite(Type type, const std::optional<std::string>& text);
// The dead letter of such a value, landed as NULL: where (the table), which column, the value, and `row` (its key).
DeadLetter pg_infinite_dead_letter(std::string_view qualified, const PgSourceColumn& column, std::string_view text,
                                   const nlohmann::json& row);
// Appends one value in its type's output form (what logical replication sends; the session has DateStyle ISO,
// TimeZone UTC, bytea_output hex) as the same value the select expression above gives for `source`.
Status pg_append_output_text(Column& column, const PgSourceColumn& source, const std::optional<std::string>& text);

// SELECT <every column's expression>, <each ordering column as text> FROM qualified t [WHERE conditions AND
// (ordering) > ($1, $2, ...)] ORDER BY ordering LIMIT limit: one page of a keyset read resumed after the last
// ordering values read (passed as the parameters, as text).
std::string pg_keyset_select_sql(const std::string& qualified, const std::vector<PgSourceColumn>& columns,
                                 const std::vector<std::string>& ordering, bool resume, size_t limit,
                                 const std::vector<std::string>& conditions = {});

}  // namespace skippr
