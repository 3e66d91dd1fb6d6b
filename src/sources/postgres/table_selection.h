// Which tables a Postgres source reads (core/table_selection.h): the server's ordinary and partitioned tables.
#pragma once

#include <string_view>
#include <vector>

#include "clients/postgres/pg_client.h"
#include "core/result.h"
#include "core/table_selection.h"

namespace skippr {

// The tables of `selection` on the server, in (schema, table) order (see select_tables_from).
Result<std::vector<SelectedTable>> select_tables(PgConnection& conn, const TableSelection& selection,
                                                 std::string_view what);

}  // namespace skippr
