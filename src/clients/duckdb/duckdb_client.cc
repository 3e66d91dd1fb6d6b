#include "clients/duckdb/duckdb_client.h"

#include <fmt/format.h>

#include <utility>

namespace skippr {

namespace {

std::string quote_with(std::string_view text, char quote) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back(quote);
  for (char c : text) {
    if (c == quote) out.push_back(quote);
    out.push_back(c);
  }
  out.push_back(quote);
  return out;
}

// Owns a duckdb_result for the span of one call.
struct ResultGuard {
  duckdb_result result{};
  ~ResultGuard() { duckdb_destroy_result(&result); }
};

}  // namespace

std::string quote_identifier(std::string_view name) { return quote_with(name, '"'); }
std::string quote_literal(std::string_view text) { return quote_with(text, '\''); }

// ---- database ----

namespace {

struct ConfigGuard {
  duckdb_config config = nullptr;
  ~ConfigGuard() {
    if (config) duckdb_destroy_config(&config);
  }
};

}  // namespace

// The sink appends and never reads back what it wrote, yet with DuckDB's default memory_limit (80 % of RAM) every
// block it checkpoints stays in the buffer pool: measured with duckdb_memory() (duckdb_memory_probe.h), BASE_TABLE
// grew by ~1.8 MiB a 10 MiB batch (183 MiB after 100 batches, process RSS 433 MiB) while nothing else grew. A limit
// makes DuckDB drop those clean blocks (no temp files: they are on disk already); what a transaction appends beyond
// it is written to the database file early or spilled, so a large batch still fits. DuckDB's jemalloc keeps freed
// memory until a thread's cache passes allocator_flush_threshold (default 128 MiB); a lower one and its background
// threads hand it back to the system sooner.
// Sampling VmRSS every 20 ms through a 10 M-row run showed RSS swinging by 40-55 MiB within each landed batch on
// top of a floor that rises for the first ~15 s; the swings coincide with landing. One thread (the sink's own, no
// worker) keeps one jemalloc thread cache instead of one per worker: ~20 MiB off the peak and no slower (the sink
// appends through one connection, so workers had little to do). A 32MB memory_limit took another 10-15 MiB off but made
// merge_by_key's join run out of memory (DuckDbMerge tests), so the limit stays at 64 MiB. That is a floor, not a
// ceiling: DuckDB pins about two blocks per column a transaction appends to, whatever the row count, so a table of
// 2,000 columns cannot take even one row under it; the sink raises the limit for such a landing, within its
// max_memory_bytes (sinks/duckdb/duckdb_memory.h).
const std::vector<std::pair<std::string, std::string>> kAppendingSinkSettings = {
    {"memory_limit", fmt::format("{}MiB", kAppendingSinkMemoryMiB)},
    {"threads", "1"},
    {"allocator_flush_threshold", "16MB"},
    {"allocator_background_threads", "true"}};

Result<DuckDbDatabase> DuckDbDatabase::open(const std::string& path,
                                            const std::vector<std::pair<std::string, std::string>>& settings) {
  DuckDbDatabase db;
  char* error = nullptr;
  ConfigGuard config;
  if (duckdb_create_config(&config.config) != DuckDBSuccess) {
    return fail(ErrorKind::kInternal, "could not create a DuckDB configuration");
  }
  for (const auto& [name, value] : settings) {
    if (duckdb_set_config(config.config, name.c_str(), value.c_str()) != DuckDBSuccess) {
      return fail(ErrorKind::kInternal, fmt::format("DuckDB refused the setting {} = {}", name, value));
    }
  }
  if (duckdb_open_ext(path.c_str(), &db.db_, config.config, &error) != DuckDBSuccess) {
    std::string reason = error ? error : "unknown error";
    duckdb_free(error);
    db.db_ = nullptr;  // duckdb_open_ext leaves nothing to close on failure
    return fail(ErrorKind::kUnavailable, std::move(reason));
  }
  return db;
}

DuckDbDatabase::DuckDbDatabase(DuckDbDatabase&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

DuckDbDatabase& DuckDbDatabase::operator=(DuckDbDatabase&& other) noexcept {
  if (this != &other) {
    if (db_) duckdb_close(&db_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

DuckDbDatabase::~DuckDbDatabase() {
  if (db_) duckdb_close(&db_);
}

// ---- connection ----

Result<DuckDbConnection> DuckDbConnection::connect(const DuckDbDatabase& db) {
  DuckDbConnection conn;
  if (duckdb_connect(db.handle(), &conn.conn_) != DuckDBSuccess) {
    conn.conn_ = nullptr;
    return fail(ErrorKind::kUnavailable, "could not connect to the DuckDB database");
  }
  return conn;
}

DuckDbConnection::DuckDbConnection(DuckDbConnection&& other) noexcept : conn_(std::exchange(other.conn_, nullptr)) {}

DuckDbConnection& DuckDbConnection::operator=(DuckDbConnection&& other) noexcept {
  if (this != &other) {
    if (conn_) duckdb_disconnect(&conn_);
    conn_ = std::exchange(other.conn_, nullptr);
  }
  return *this;
}

DuckDbConnection::~DuckDbConnection() {
  if (conn_) duckdb_disconnect(&conn_);
}

Status DuckDbConnection::execute(std::string_view sql) {
  ResultGuard guard;
  const std::string text(sql);
  if (duckdb_query(conn_, text.c_str(), &guard.result) != DuckDBSuccess) {
    const char* error = duckdb_result_error(&guard.result);
    return fail(ErrorKind::kUnavailable, error ? error : "unknown DuckDB error");
  }
  return ok();
}

Result<QueryRows> DuckDbConnection::query(std::string_view sql) {
  ResultGuard guard;
  const std::string text(sql);
  if (duckdb_query(conn_, text.c_str(), &guard.result) != DuckDBSuccess) {
    const char* error = duckdb_result_error(&guard.result);
    return fail(ErrorKind::kUnavailable, error ? error : "unknown DuckDB error");
  }
  QueryRows out;
  const idx_t column_count = duckdb_column_count(&guard.result);
  for (idx_t c = 0; c < column_count; ++c) out.columns.emplace_back(duckdb_column_name(&guard.result, c));
  // duckdb_value_string casts any type to text the way DuckDB prints it; it is marked for removal in a future
  // release, when this loop moves to duckdb_fetch_chunk plus a cast in SQL.
  const idx_t row_count = duckdb_row_count(&guard.result);
  out.rows.reserve(row_count);
  for (idx_t r = 0; r < row_count; ++r) {
    auto& row = out.rows.emplace_back();
    row.reserve(column_count);
    for (idx_t c = 0; c < column_count; ++c) {
      if (duckdb_value_is_null(&guard.result, c, r)) {
        row.emplace_back(std::nullopt);
        continue;
      }
      duckdb_string value = duckdb_value_string(&guard.result, c, r);
      row.emplace_back(std::string(value.data ? value.data : "", value.size));
      duckdb_free(value.data);
    }
  }
  return out;
}

// ---- transaction ----

Result<DuckDbTransaction> DuckDbTransaction::begin(DuckDbConnection& conn) {
  SKIPPR_TRY(conn.execute("BEGIN TRANSACTION"));
  return DuckDbTransaction(&conn);
}

DuckDbTransaction::DuckDbTransaction(DuckDbTransaction&& other) noexcept : conn_(std::exchange(other.conn_, nullptr)) {}

DuckDbTransaction::~DuckDbTransaction() { rollback(); }

Status DuckDbTransaction::commit() { return std::exchange(conn_, nullptr)->execute("COMMIT"); }

void DuckDbTransaction::rollback() {
  // Nothing to report: a failed ROLLBACK means the transaction is gone already.
  if (conn_) (void)std::exchange(conn_, nullptr)->execute("ROLLBACK");
}

// ---- appender ----

Result<DuckDbAppender> DuckDbAppender::create(DuckDbConnection& conn, const std::string& table) {
  DuckDbAppender appender;
  if (duckdb_appender_create(conn.handle(), nullptr, table.c_str(), &appender.appender_) != DuckDBSuccess) {
    auto status =
        appender.error_status(fmt::format("could not create an appender for table {}", quote_identifier(table)));
    return std::unexpected(status.error());
  }
  return appender;
}

DuckDbAppender::DuckDbAppender(DuckDbAppender&& other) noexcept : appender_(std::exchange(other.appender_, nullptr)) {}

DuckDbAppender::~DuckDbAppender() {
  // Destroying flushes what is buffered; a caller that cares has called close() and seen its error already.
  if (appender_) duckdb_appender_destroy(&appender_);
}

size_t DuckDbAppender::column_count() const { return duckdb_appender_column_count(appender_); }

duckdb_logical_type DuckDbAppender::column_type(size_t column) const {
  return duckdb_appender_column_type(appender_, column);
}

Status DuckDbAppender::append(duckdb_data_chunk chunk) {
  if (duckdb_append_data_chunk(appender_, chunk) != DuckDBSuccess) return error_status("appending rows failed");
  return ok();
}

Status DuckDbAppender::close() {
  if (duckdb_appender_close(appender_) != DuckDBSuccess) return error_status("flushing appended rows failed");
  return ok();
}

Status DuckDbAppender::error_status(std::string_view what) const {
  std::string reason = "unknown DuckDB error";
  if (appender_) {
    duckdb_error_data data = duckdb_appender_error_data(appender_);
    if (duckdb_error_data_has_error(data)) reason = duckdb_error_data_message(data);
    duckdb_destroy_error_data(&data);
  }
  return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", what, reason));
}

}  // namespace skippr
