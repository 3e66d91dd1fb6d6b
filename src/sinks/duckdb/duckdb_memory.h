// The memory DuckDB may use while the sink lands. DuckDB pins about two blocks (256 KiB each) and their buffers for
// every column a transaction appends to, however few rows it appends, so the sink's usual memory_limit
// (kAppendingSinkMemoryMiB) cannot take one row of a table with 2,000 columns ("could not allocate block", on every
// retry). A landing into a wide table raises the limit for its transaction to what the table's width needs, up to the
// sink's max_memory_bytes, and lowers it again after: memory is bounded by that setting, never by the input. A
// table too wide for it is a kConfig error naming the setting (the batch waits in the WAL until it is raised).
#pragma once

#include <cstdint>
#include <string>

#include "clients/duckdb/duckdb_client.h"

namespace skippr {

inline constexpr uint64_t kDefaultMaxMemoryBytes = uint64_t{4} << 30;

// DuckDB's memory_limit (MiB) for a landing that appends to `tables` tables of `columns` columns at once.
uint64_t duckdb_memory_needed_mib(size_t columns, int tables);

class DuckDbMemoryLimit {
 public:
  // `max_bytes`: the sink's max_memory_bytes; `sink`: its name in skippr.yml, for the message.
  DuckDbMemoryLimit(uint64_t max_bytes, std::string sink) : max_mib_(max_bytes >> 20), sink_(std::move(sink)) {}

  // The database was (re)opened with memory_limit `mib` (kAppendingSinkSettings', or max_mib() for a WAL replay).
  void opened(uint64_t mib) { current_mib_ = mib; }
  uint64_t max_mib() const { return max_mib_; }
  // Raises the limit, when needed, so that `tables` tables of `columns` columns can be appended to; kConfig when that
  // needs more than max_memory_bytes. `where` names the table for the message.
  Status fit(DuckDbConnection& conn, size_t columns, int tables, const std::string& where);
  // Back to the usual limit after a landing (or an open) that raised it, with a checkpoint first. A failure leaves
  // it raised, which is still within max_memory_bytes.
  void lower(DuckDbConnection& conn);

 private:
  Status set(DuckDbConnection& conn, uint64_t mib);
  uint64_t max_mib_;
  std::string sink_;
  uint64_t current_mib_ = kAppendingSinkMemoryMiB;
};

}  // namespace skippr
