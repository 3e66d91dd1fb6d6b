#include "sinks/schema_evolution.h"

#include <algorithm>

#include "sinks/change_fields.h"

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

}  // namespace skippr
