// Owning wrappers for DuckDB's C handles (database, connection, appender, transaction) and the two calls everything
// needs: run a statement, read a result as text. The sink, its tests and the benchmarks share them.
#pragma once

#include <duckdb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace skippr {

// "name" with embedded quotes doubled: safe for any table or column name.
std::string quote_identifier(std::string_view name);
// 'text' with embedded quotes doubled.
std::string quote_literal(std::string_view text);

// A result as text, converted by DuckDB's own casts; NULL is nullopt. For lookups and tests, not for bulk reads.
struct QueryRows {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

// For a database the sink appends to: a bounded buffer pool, so peak RSS does not grow with the table (see the .cc).
// Its memory_limit is kAppendingSinkMemoryMiB; a landing that needs more (a wide table) raises it for its own
// transaction (sinks/duckdb/duckdb_memory.h).
inline constexpr uint64_t kAppendingSinkMemoryMiB = 64;
extern const std::vector<std::pair<std::string, std::string>> kAppendingSinkSettings;

class DuckDbDatabase {
 public:
  // Opens or creates the file. Every failure is kUnavailable carrying DuckDB's reason verbatim (for a lock it names
  // the holder's PID); the caller knows better whether the failure can go away. `settings` are DuckDB options
  // (name, value) given at open, e.g. kAppendingSinkSettings.
  static Result<DuckDbDatabase> open(const std::string& path,
                                     const std::vector<std::pair<std::string, std::string>>& settings = {});

  DuckDbDatabase(DuckDbDatabase&& other) noexcept;
  DuckDbDatabase& operator=(DuckDbDatabase&& other) noexcept;
  DuckDbDatabase(const DuckDbDatabase&) = delete;
  DuckDbDatabase& operator=(const DuckDbDatabase&) = delete;
  ~DuckDbDatabase();

  duckdb_database handle() const { return db_; }

 private:
  DuckDbDatabase() = default;
  duckdb_database db_ = nullptr;
};

// Must not outlive the database it was made from.
class DuckDbConnection {
 public:
  static Result<DuckDbConnection> connect(const DuckDbDatabase& db);

  DuckDbConnection(DuckDbConnection&& other) noexcept;
  DuckDbConnection& operator=(DuckDbConnection&& other) noexcept;
  DuckDbConnection(const DuckDbConnection&) = delete;
  DuckDbConnection& operator=(const DuckDbConnection&) = delete;
  ~DuckDbConnection();

  // Runs one or more statements; a failure is kUnavailable with DuckDB's message.
  Status execute(std::string_view sql);
  Result<QueryRows> query(std::string_view sql);

  duckdb_connection handle() const { return conn_; }

 private:
  DuckDbConnection() = default;
  duckdb_connection conn_ = nullptr;
};

// BEGIN .. COMMIT; rolls back on destruction unless committed, so every early return and every exception (a test's
// failpoint may throw) leaves nothing behind.
class DuckDbTransaction {
 public:
  static Result<DuckDbTransaction> begin(DuckDbConnection& conn);

  DuckDbTransaction(DuckDbTransaction&& other) noexcept;
  DuckDbTransaction& operator=(DuckDbTransaction&&) = delete;
  DuckDbTransaction(const DuckDbTransaction&) = delete;
  DuckDbTransaction& operator=(const DuckDbTransaction&) = delete;
  ~DuckDbTransaction();

  // The transaction is finished whatever this returns: DuckDB rolls back a commit that fails.
  Status commit();
  void rollback();

 private:
  explicit DuckDbTransaction(DuckDbConnection* conn) : conn_(conn) {}
  DuckDbConnection* conn_ = nullptr;  // null once finished
};

// Appends whole data chunks to a table. Rows are buffered by DuckDB and reach the table (and the connection's open
// transaction) at close().
class DuckDbAppender {
 public:
  static Result<DuckDbAppender> create(DuckDbConnection& conn, const std::string& table);

  DuckDbAppender(DuckDbAppender&& other) noexcept;
  DuckDbAppender& operator=(DuckDbAppender&&) = delete;
  DuckDbAppender(const DuckDbAppender&) = delete;
  DuckDbAppender& operator=(const DuckDbAppender&) = delete;
  ~DuckDbAppender();

  size_t column_count() const;
  // The caller owns the returned type (duckdb_destroy_logical_type).
  duckdb_logical_type column_type(size_t column) const;
  Status append(duckdb_data_chunk chunk);
  Status close();

 private:
  DuckDbAppender() = default;
  Status error_status(std::string_view what) const;
  duckdb_appender appender_ = nullptr;
};

}  // namespace skippr
