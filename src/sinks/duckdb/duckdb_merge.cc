#include "sinks/duckdb/duckdb_merge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "clients/duckdb/duckdb_client.h"
#include "core/change_fields.h"
#include "sinks/duckdb/duckdb_types.h"
#include "sinks/kit/merge_sql.h"

namespace skippr {
namespace {

std::string joined(const std::vector<std::string>& parts, std::string_view separator = ", ") {
  return fmt::format("{}", fmt::join(parts, separator));
}

}  // namespace

std::vector<TableColumn> stage_columns(const Batch& batch, const std::vector<TableColumn>& target_columns) {
  const ColumnRules rules = duckdb_column_rules();
  std::vector<TableColumn> stage;
  for (const auto& field : batch.schema.fields) {
    const TableColumn* target = is_change_field(field.name) ? nullptr : find_column(target_columns, field.name, rules);
    stage.push_back({field.name, target ? target->type : std::string(duckdb_sql_type(field.type))});
  }
  stage.push_back({std::string(kRowNumberColumn), "BIGINT"});
  return stage;
}

std::string create_stage_sql(const std::vector<TableColumn>& stage) {
  std::vector<std::string> definition;
  for (const auto& column : stage)
    definition.push_back(fmt::format("{} {}", quote_identifier(column.name), column.type));
  return fmt::format("CREATE TEMP TABLE {} ({})", quote_identifier(kDuckDbStageTable), joined(definition));
}

std::vector<std::string> merge_statements(const Batch& batch, const BatchId& id, const MergeTarget& target,
                                          bool with_deletes) {
  const MergeSql m{quote_identifier(target.table),
                   quote_identifier(target.table + std::string(kTombstoneSuffix)),
                   quote_identifier(kDuckDbStageTable),
                   target.primary_key,
                   target.columns,
                   duckdb_column_rules(),
                   "HUGEINT"};
  std::vector<std::string> statements = merge_apply_sql(batch, id, m, with_deletes);
  // The tombstone table exists before the MERGE reads it (after a truncate's DELETE, as it always ran).
  const size_t merge_at = has_truncates(batch) ? 1 : 0;
  statements.insert(statements.begin() + static_cast<std::ptrdiff_t>(merge_at), tombstones_create_sql(m));
  statements.push_back(fmt::format("DROP TABLE {}", m.stage));
  return statements;
}

}  // namespace skippr
