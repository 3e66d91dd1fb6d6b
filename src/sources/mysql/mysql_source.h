// MySQL / MariaDB source. incremental: rows ordered by (cursor_column, primary key), resumed after the last pair
// read; snapshot: every table once, in key order; snapshot_then_cdc and cdc_only: the tables' changes from the
// binlog (mysql_cdc_source.h).
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec mysql_source_spec();
}
