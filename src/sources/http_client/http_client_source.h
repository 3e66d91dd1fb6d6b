// HttpClient: reads a paginated JSON REST API (cursor, offset, page or Link-header pagination). The position is the
// incremental cursor (the largest `incremental_cursor_field` committed so far), sent as `incremental_param` on the
// next run so only newer records are read. Records must come in ascending cursor order for a mid-run resume to be
// exact (as with any cursor-based incremental API).
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec http_client_source_spec();
}
