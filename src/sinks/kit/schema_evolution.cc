#include "sinks/kit/schema_evolution.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/change_fields.h"

namespace skippr {

const TableColumn* find_column(const std::vector<TableColumn>& columns, std::string_view name,
                               const ColumnRules& rules) {
  auto it = std::ranges::find_if(columns, [&](const TableColumn& c) { return rules.same_name(c.name, name); });
  return it == columns.end() ? nullptr : &*it;
}

Result<std::vector<Field>> fields_to_add(const std::vector<TableColumn>& table, const Schema& batch,
                                         const ColumnRules& rules, std::string_view, bool skip_change_fields) {
  std::vector<Field> missing;
  for (const auto& field : batch.fields) {
    if (skip_change_fields && is_change_field(field.name)) continue;
    const TableColumn* existing = find_column(table, field.name, rules);
    if (!existing) {
      missing.push_back(field);
    }
    // A field whose column has another type is conform_batch's to convert or reject, row by row.
  }
  return missing;
}

std::vector<std::string> new_table_definitions(const Schema& schema, const ColumnRules& rules,
                                               const std::function<std::string(Type)>& type_of,
                                               std::string_view order_token_type) {
  std::vector<std::string> definitions;
  for (const Field& field : schema.fields) {
    if (!order_token_type.empty() && is_change_field(field.name)) continue;
    definitions.push_back(rules.quote(field.name) + " " + type_of(field.type));
  }
  // merge_by_key keeps each row's order token.
  if (!order_token_type.empty()) definitions.push_back(rules.quote(kOrderColumn) + " " + std::string(order_token_type));
  return definitions;
}

Status check_key_columns(const std::vector<TableColumn>& columns, const std::vector<std::string>& primary_key,
                         const ColumnRules& rules, std::string_view where) {
  for (const auto& key : primary_key) {
    if (!find_column(columns, key, rules)) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the table has no column {} of the pipeline's primary_key; fix "
                                                  "primary_key or choose another table",
                                                  where, rules.quote(key)));
    }
  }
  return ok();
}

}  // namespace skippr
