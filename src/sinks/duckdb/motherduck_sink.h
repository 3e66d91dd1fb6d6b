// MotherDuck: exactly once, as the DuckDB sink (sinks/duckdb/duckdb_sink.h) on "md:<database>": DuckDB's motherduck
// extension carries the transactions, so the rows and the ledger row commit together there as in a file.
//
// The extension is loaded from DuckDB's extension directory (the `extension_directory` parameter, else DuckDB's
// default ~/.duckdb/extensions) and never downloaded: skipprd turns DuckDB's autoinstall off. Its absence is a
// configuration error at start-up, before anything is read. The token goes to DuckDB as its `motherduck_token`
// option, never in the database path, and is redacted from every message.
#pragma once

#include "core/connector.h"

namespace skippr {

ConnectorSpec motherduck_sink_spec();

}  // namespace skippr
