#include "sources/postgres/table_selection.h"

namespace skippr {

Result<std::vector<SelectedTable>> select_tables(PgConnection& conn, const TableSelection& selection,
                                                 std::string_view what) {
  // Ordinary and partitioned tables the user can see; partitions of a partitioned table are read through it.
  auto rows = conn.query(
      "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN "
      "('r', 'p') AND NOT c.relispartition AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname "
      "NOT LIKE 'pg\\_toast%' ORDER BY 1, 2");
  if (!rows) return std::unexpected(rows.error());
  std::vector<std::pair<std::string, std::string>> on_server;
  for (const auto& row : rows->rows) on_server.emplace_back(row[0].value_or(""), row[1].value_or(""));
  return select_tables_from(on_server, selection, what);
}

}  // namespace skippr
