// HttpServer: a push source. Clients POST JSON to /ingest; with `ack: committed` the 200 is sent only after the
// records are committed to the WAL (many requests share one batch and so one fsync: group commit), so a client that
// retries everything that did not get a 200 loses nothing, even across kill -9.
//
// Slow clients: the server is event-driven (libmicrohttpd, mhd_server.h), so a connection costs a socket, not a thread,
// whether it is still sending its head, trickling its body or waiting for its commit; at most max_connections are open
// (one more is closed at once), and one that sends nothing for client_timeout_seconds is closed. That timeout is idle
// time, not a deadline: a client that sends a byte every second keeps its connection, but it only takes one of the
// max_connections sockets and delays nobody. Without the token the body is read and dropped, never kept.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec http_server_source_spec();
}
