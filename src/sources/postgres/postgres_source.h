// Postgres source. incremental: rows ordered by (cursor_column, primary key), resumed after the last (cursor, key)
// read, so rows sharing a cursor value are neither lost nor read twice; snapshot: the whole table once, ordered by
// the primary key. The CDC modes (snapshot_then_cdc, cdc_only) are cdc_source.h.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec postgres_source_spec();
}
