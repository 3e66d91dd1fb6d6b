#include "sinks/kit/replace_landing.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sinks/kit/conform_batch.h"

namespace skippr {

Batch with_sync_column(const Batch& batch, std::string_view sync_id) {
  Batch tagged = batch;
  Column sync(Type::kString);
  sync.reserve(batch.rows, batch.rows * sync_id.size());
  for (size_t row = 0; row < batch.rows; ++row) sync.append_string(sync_id);
  tagged.schema.fields.push_back({std::string(kSyncColumn), Type::kString});
  tagged.columns.push_back(std::move(sync));
  return tagged;
}

Status check_sync_field(const Batch& batch, std::string_view where) {
  if (batch.schema.index_of(kSyncColumn) >= 0) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: the batch has a field named {}, which a replace landing keeps for itself; rename it "
                            "at the source",
                            where, kSyncColumn));
  }
  return ok();
}

Result<std::optional<Batch>> with_partition_fields(
    const Batch& batch, const std::vector<std::string>& partition_by,
    const std::function<Result<std::vector<TableColumn>>()>& table_columns, const ColumnRules& rules) {
  std::vector<std::string> missing;
  for (const auto& name : partition_by) {
    if (batch.schema.index_of(name) < 0) missing.push_back(name);
  }
  if (missing.empty() || batch.rows == 0) return std::optional<Batch>();
  auto columns = table_columns();
  if (!columns) return std::unexpected(columns.error());
  Batch widened = batch;
  for (const auto& name : missing) {
    const TableColumn* column = find_column(*columns, name, rules);
    const std::optional<Type> type = column ? column_value_type(column->type, rules) : std::nullopt;
    widened.add_column({name, type.value_or(Type::kString)});
  }
  return std::optional<Batch>(std::move(widened));
}

std::string replace_partitions_sql(const ReplaceDialect& d, const std::string& table,
                                   const std::vector<std::string>& partition_by, std::string_view sync_id) {
  const std::string sync = d.quote_identifier(kSyncColumn);
  const std::string id = d.quote_literal(sync_id);
  std::vector<std::string> old_values, new_values, same;
  for (const auto& name : partition_by) {
    const std::string column = d.quote_identifier(name);
    old_values.push_back("o." + column);
    new_values.push_back("n." + column);
    same.push_back(fmt::format("n.{} IS NOT DISTINCT FROM o.{}", column, column));
  }
  if (d.jsonb_partition_keys) {
    return fmt::format(
        "DELETE FROM {0} o WHERE o.{1} IS DISTINCT FROM {2} AND jsonb_build_array({3}) IN (SELECT DISTINCT "
        "jsonb_build_array({4}) FROM {0} n WHERE n.{1} = {2})",
        table, sync, id, fmt::join(old_values, ", "), fmt::join(new_values, ", "));
  }
  return fmt::format(
      "DELETE FROM {0} o WHERE o.{1} IS DISTINCT FROM {2} AND EXISTS (SELECT 1 FROM {0} n WHERE n.{1} = {2} AND {3})",
      table, sync, id, fmt::join(same, " AND "));
}

std::string refresh_leftover_sql(const ReplaceDialect& d, const std::string& refresh, std::string_view sync_id) {
  return fmt::format("SELECT 1 FROM {} WHERE {} IS DISTINCT FROM {} LIMIT 1", refresh, d.quote_identifier(kSyncColumn),
                     d.quote_literal(sync_id));
}

std::vector<std::string> refresh_swap_sql(const ReplaceDialect& d, const std::string& target,
                                          const std::string& refresh, const std::vector<TableColumn>& refresh_columns,
                                          const std::vector<TableColumn>& target_columns, const ColumnRules& rules) {
  std::vector<std::string> statements, definitions, names;
  for (const auto& column : refresh_columns) {
    if (rules.same_name(column.name, kSyncColumn)) continue;
    const std::string name = d.quote_identifier(column.name);
    names.push_back(name);
    definitions.push_back(fmt::format("{} {}", name, column.type));
    if (!target_columns.empty() && !find_column(target_columns, column.name, rules)) {
      statements.push_back(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", target, name, column.type));
    }
  }
  if (!target_columns.empty()) {
    statements.push_back(fmt::format("DELETE FROM {}", target));
  } else if (!names.empty()) {
    statements.push_back(fmt::format("CREATE TABLE {} ({})", target, fmt::join(definitions, ", ")));
  }
  if (!names.empty()) {
    statements.push_back(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {}", target, fmt::join(names, ", "),
                                     fmt::join(names, ", "), refresh));
  }
  statements.push_back(fmt::format("DROP TABLE {}", refresh));
  return statements;
}

}  // namespace skippr
