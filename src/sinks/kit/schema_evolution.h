// Additive schema evolution, shared by the SQL sinks: compare a table's columns with a batch's fields, find the
// fields to add as nullable columns. Each sink supplies its own name
// matching and type rules.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

struct TableColumn {
  std::string name;
  std::string type;  // as the database's catalog spells it
};

struct ColumnRules {
  std::function<bool(std::string_view table_column, std::string_view field)> same_name;
  // Whether a column of this type takes the field's values without a lossy or surprising conversion.
  std::function<bool(std::string_view column_type, Type field_type)> accepts;
  std::function<std::string(std::string_view name)> quote;
  // The values an integer column of this type holds, when narrower than int64 (Postgres integer, smallint);
  // a value outside it is rejected row by row rather than failing the whole batch.
  std::function<std::optional<std::pair<int64_t, int64_t>>(std::string_view column_type)> int_range = {};
  // Why a text value cannot be stored in a column of this type (PostgreSQL text cannot hold a NUL character), or
  // nullopt; such a value rejects its row rather than failing the whole batch.
  std::function<std::optional<std::string>(std::string_view column_type, std::string_view text)> text_problem = {};
  // The magnitude from which a number overflows a column of this type (PostgreSQL numeric(p,s)), or nullopt.
  std::function<std::optional<double>(std::string_view column_type)> magnitude_limit = {};
};

// The table column matching `name`, or null.
const TableColumn* find_column(const std::vector<TableColumn>& columns, std::string_view name,
                               const ColumnRules& rules);

// The batch's fields the table lacks, in batch order. A field whose column has another type is not one of them
// (sinks/kit/conform_batch.h converts or rejects its values). With `skip_change_fields`, _skippr_op and
// _skippr_order are not data (merge_by_key) and are left out.
Result<std::vector<Field>> fields_to_add(const std::vector<TableColumn>& table, const Schema& batch,
                                         const ColumnRules& rules, std::string_view where, bool skip_change_fields);

// The column definitions of a table made from `schema`, each `quote(name) type_of(type)`. merge_by_key
// (`order_token_type` not empty): the change fields left out, the order column added with that type.
std::vector<std::string> new_table_definitions(const Schema& schema, const ColumnRules& rules,
                                               const std::function<std::string(Type)>& type_of,
                                               std::string_view order_token_type = {});

// kConfig naming `where` when the table has no column for a field of the pipeline's primary_key.
Status check_key_columns(const std::vector<TableColumn>& columns, const std::vector<std::string>& primary_key,
                         const ColumnRules& rules, std::string_view where);

}  // namespace skippr
