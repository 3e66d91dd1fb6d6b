// HttpServer: a push source. Clients POST JSON to /ingest; with `ack: committed` the 200 is sent only after the
// records are committed to the WAL (many requests share one batch and so one fsync: group commit), so a client that
// retries everything that did not get a 200 loses nothing, even across kill -9.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec http_server_source_spec();
}
