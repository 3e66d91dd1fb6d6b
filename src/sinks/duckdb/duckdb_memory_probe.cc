#include "sinks/duckdb/duckdb_memory_probe.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

namespace skippr {

namespace {

uint64_t every_from_env() {
  const char* text = std::getenv("SKIPPR_DUCKDB_MEMORY_EVERY");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 0;
}

uint64_t rss_mib() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) >> 20;
}

std::string rows_text(const QueryRows& rows) {
  std::string out;
  for (const auto& row : rows.rows) {
    out += " |";
    for (size_t c = 0; c < row.size(); ++c) out += fmt::format(" {}={}", rows.columns[c], row[c].value_or("NULL"));
  }
  return out;
}

}  // namespace

void log_duckdb_memory_if_asked(DuckDbConnection& conn) {
  static const uint64_t every = every_from_env();
  static std::atomic<uint64_t> calls{0};
  if (every == 0 || ++calls % every != 0) return;
  auto tags = conn.query(
      "SELECT tag, memory_usage_bytes >> 20 AS mib, temporary_storage_bytes >> 20 AS temp_mib FROM duckdb_memory() "
      "WHERE memory_usage_bytes > 0 OR temporary_storage_bytes > 0 ORDER BY memory_usage_bytes DESC");
  auto size = conn.query("SELECT database_size, wal_size, memory_usage, memory_limit FROM pragma_database_size()");
  spdlog::info("duckdb memory after {} batches: rss {} MiB; tags{}; database{}", calls.load(), rss_mib(),
               tags ? rows_text(*tags) : " error: " + tags.error().message,
               size ? rows_text(*size) : " error: " + size.error().message);
}

}  // namespace skippr
