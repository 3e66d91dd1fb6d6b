// DuckDB: exactly once. The rows and the BatchId (in the ledger table _skippr_batches, see sinks/kit/batch_ledger.h)
// are committed in one transaction; a retry that finds its BatchId in the ledger does nothing. landing: append (the
// appender) or merge_by_key (duckdb_merge.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/connector.h"
#include "sinks/duckdb/duckdb_memory.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {

ConnectorSpec duckdb_sink_spec();

// Where a DuckDB sink writes: a database file, or a database DuckDB reaches through an extension (MotherDuck's
// "md:<database>", sinks/duckdb/motherduck_sink.h).
struct DuckDbTarget {
  std::string path;
  std::vector<std::pair<std::string, std::string>> settings;  // DuckDB options given at open
  std::vector<std::string> secrets;                           // redacted from every message about the open
  bool local_file = true;                                     // its folder is created when absent
  uint64_t max_memory_bytes = kDefaultMaxMemoryBytes;         // DuckDB's limit for a wide table (duckdb_memory.h)
};
// The DuckDB sink on `target` (merge_by_key, replace_* and the ledger as for a file), landing each stream in the
// table `tables` names for it, all of a batch's streams in one transaction.
std::unique_ptr<Sink> make_duckdb_sink(DuckDbTarget target, StreamTables tables, const ConnectorContext& ctx);
// kConfig when the pipeline's landing cannot work (merge_by_key without primary_key).
Status check_duckdb_landing(const ConnectorContext& ctx);

}  // namespace skippr
