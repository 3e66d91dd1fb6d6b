#include "sinks/duckdb/duckdb_memory.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace skippr {

namespace {

// Measured with the C API (DuckDB 1.4.4, one thread): the smallest memory_limit that appends in one transaction was
// 192 MB for one row into 2,000 VARCHAR columns, 96 MB into 2,000 BIGINT ones, and 600 MB for 20,000 rows into 1,000
// BIGINT columns; beyond one row group it grows no more. So ~0.6 MiB a column, taken as 0.625 (2.5 blocks).
constexpr uint64_t kKibPerColumn = 640;

}  // namespace

uint64_t duckdb_memory_needed_mib(size_t columns, int tables) {
  const uint64_t per_table_kib = static_cast<uint64_t>(columns) * kKibPerColumn;
  return kAppendingSinkMemoryMiB + (static_cast<uint64_t>(std::max(tables, 1)) * per_table_kib + 1023) / 1024;
}

Status DuckDbMemoryLimit::fit(DuckDbConnection& conn, size_t columns, int tables, const std::string& where) {
  const uint64_t needed = duckdb_memory_needed_mib(columns, tables);
  if (needed <= current_mib_) return ok();
  if (needed > max_mib_) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} has {} columns: landing into it needs about {} MiB of DuckDB memory (DuckDB holds ~0.6 "
                            "MiB for each column it appends to), more than sink '{}' allows with max_memory_bytes ({} "
                            "MiB); raise max_memory_bytes, or land fewer fields",
                            where, columns, needed, sink_, max_mib_));
  }
  spdlog::debug("{}: {} columns, DuckDB's memory_limit raised to {} MiB for this landing", where, columns, needed);
  return set(conn, needed);
}

void DuckDbMemoryLimit::lower(DuckDbConnection& conn) {
  if (current_mib_ <= kAppendingSinkMemoryMiB) return;
  // What a wide landing committed stays in DuckDB's memory, or spilled to its temporary file, until a checkpoint:
  // each transaction leaves ~2 blocks per column (1 GB of temporary storage after three landings of 100 rows of
  // 2,000 columns), which the checkpoint at close, or the WAL replay of the next open, must then read back under the
  // usual limit. So it is checkpointed now, under the raised limit: a checkpoint needs about what the landing did
  // (tried under "what DuckDB holds + 16 MiB", it ran out of memory, and that invalidates the database), and DuckDB
  // refuses a limit below what it holds until then.
  if (auto st = conn.execute("CHECKPOINT"); !st)
    spdlog::debug("checkpoint after a wide landing: {}", st.error().message);
  if (auto st = set(conn, kAppendingSinkMemoryMiB); !st) {
    spdlog::debug("DuckDB's memory_limit stays at {} MiB for now: {}", current_mib_, st.error().message);
  }
}

Status DuckDbMemoryLimit::set(DuckDbConnection& conn, uint64_t mib) {
  SKIPPR_TRY(conn.execute(fmt::format("SET memory_limit = '{}MiB'", mib)));
  current_mib_ = mib;
  return ok();
}

}  // namespace skippr
