// Which tables a database source reads: `tables` names them, plainly or by pattern (* and ? within a name:
// public.*, sales.order_*), `exclude_tables` leaves some out. A name without a schema is in the source's default
// schema (Postgres: `schema`; MySQL: the database). Each selected table is a stream, named after the table when it
// is in that schema and schema.table otherwise. Shared by the database sources; each lists its server's tables.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/connector.h"
#include "core/result.h"

namespace skippr {

struct SelectedTable {
  std::string schema;
  std::string table;
  std::string stream;  // the stream's name (see above)
};

struct TableSelection {
  std::string default_schema;
  std::vector<std::string> include;  // as written
  std::vector<std::string> exclude;
  // True when it may name several tables (more than one entry, or a pattern): the source then names streams.
  bool names_streams() const;
  // The one table of a selection that names one: "schema.table" in `include` overrides `default_schema`.
  SelectedTable single() const;
};

// The tables of `selection` among `on_server` ((schema, table) pairs, in the order to read them). kConfig naming the
// entry when a plain name is no table, or a pattern matches none (`what` names the source). skipprd's own tables
// (_skippr_*) never match a pattern.
Result<std::vector<SelectedTable>> select_tables_from(const std::vector<std::pair<std::string, std::string>>& on_server,
                                                      const TableSelection& selection, std::string_view what);

// The parameters every database source takes to choose and read its tables: tables (documented by `tables_doc`),
// exclude_tables, mode (its CDC reading `cdc_how`) and cursor_column.
void add_table_reading_params(std::vector<ParamSpec>& params, std::string tables_doc, std::string_view cdc_how);

// The position of a database source that reads tables one by one (snapshot, incremental): with several tables,
// {"tables": {<stream>: <its part>}}; with one, its part alone (the format one-table pipelines always had).
Position table_parts_position(bool several, const std::vector<std::pair<std::string, nlohmann::json>>& parts);
// Each stream's part of such a position (null: none, read from its start), in the order of `streams`; nullopt when
// the text is no such position.
std::optional<std::vector<nlohmann::json>> table_parts_of(const Position& position, bool several,
                                                          const std::vector<std::string>& streams);

// A database source's parameters as written (possibly invalid): true when `mode` is a CDC mode (snapshot_then_cdc,
// cdc_only) and `tables` may name several tables, so each table's batches carry its own key (ConnectorSpec::
// keys_streams).
bool cdc_keys_streams(const nlohmann::json& params);

}  // namespace skippr
