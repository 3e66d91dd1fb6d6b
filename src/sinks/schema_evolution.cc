#include "sinks/schema_evolution.h"

#include <fmt/format.h>

#include <algorithm>

#include "sinks/change_fields.h"

namespace skippr {

const TableColumn* find_column(const std::vector<TableColumn>& columns, std::string_view name,
                               const ColumnRules& rules) {
  auto it = std::ranges::find_if(columns, [&](const TableColumn& c) { return rules.same_name(c.name, name); });
  return it == columns.end() ? nullptr : &*it;
}

Result<std::vector<Field>> fields_to_add(const std::vector<TableColumn>& table, const Schema& batch,
                                         const ColumnRules& rules, std::string_view where, bool skip_change_fields) {
  std::vector<Field> missing;
  for (const auto& field : batch.fields) {
    if (skip_change_fields && is_change_field(field.name)) continue;
    const TableColumn* existing = find_column(table, field.name, rules);
    if (!existing) {
      missing.push_back(field);
    } else if (!rules.accepts(existing->type, field.type)) {
      // Stops the run rather than dead-lettering a whole batch: the user chooses a cast or a new table, and the
      // batch waits in the WAL meanwhile.
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: column {} is {} but the batch's field {} is {}; a type change is not applied "
                              "silently. Cast it in the source, alter the column, or land it in a new table",
                              where, rules.quote(existing->name), existing->type, rules.quote(field.name),
                              to_string(field.type)));
    }
  }
  return missing;
}

}  // namespace skippr
