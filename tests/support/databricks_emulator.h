// Test support: an emulator of the parts of Databricks' REST API the Databricks sink calls, in the test process on a
// free loopback port, the SQL run for real on an in-memory DuckDB (a catalog is an attached database, a schema its
// schema) and volume files kept in a folder. What it implements, as the API reference defines it:
// - Files API: PUT /api/2.0/fs/files{path} (overwrite=false answers 409 ALREADY_EXISTS for a file that is there;
//   parents made; 404 outside a volume), GET and DELETE of a file (404 NOT_FOUND), GET /api/2.0/fs/directories{path}
//   (contents with name / path / is_directory / file_size, paged by `page_size` with next_page_token);
// - Statement Execution API: POST /api/2.0/sql/statements (statement, warehouse_id, catalog, schema, wait_timeout 0s
//   or 5-50 s, format JSON_ARRAY, disposition INLINE), GET /api/2.0/sql/statements/{id}; StatementResponse bodies
//   (status.state PENDING / RUNNING / SUCCEEDED / FAILED with error.error_code and message, manifest.schema,
//   result.data_array of strings). Each statement runs asynchronously on a thread and a DuckDB connection of its own
//   and outlives the request and the client that submitted it (as with on_wait_timeout CONTINUE): the POST answers
//   with the result when it ends within wait_timeout, else with its id and state; a GET reports its state now;
// - COPY INTO ... FROM (SELECT ... FROM '<folder>') FILEFORMAT = JSON FILES = (...) with primitivesAsString, in one
//   transaction: each file loaded into a table once (its load history, per table, recorded when the COPY INTO
//   commits), a file in the history skipped (the documented idempotency), a COPY INTO of a file another COPY INTO
//   is still loading into that table refused with COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED (SQLSTATE 25000);
//   read_files('<file>', format => 'json', primitivesAsString => true) in a query;
// - a bearer token checked on every call (401 otherwise), an unknown warehouse 404.
// Not covered: Delta's isolation (statements run under DuckDB's snapshot isolation, where two conditional INSERTs
// into one table do not conflict), on_wait_timeout CANCEL and the cancel call (answered, nothing is canceled),
// statement timeouts, time travel, COPY INTO's other formats and options, VARIANT, result chunks beyond the first,
// OAuth. Databricks SQL becomes DuckDB SQL in one place (databricks_to_duckdb_sql). Lost answers come from
// tests/support/fault_proxy in front of it.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace skippr::test {

// Databricks SQL -> DuckDB SQL, outside COPY INTO (exposed for its unit test). `local_path` maps a /Volumes/ path to
// the emulator's folder.
std::string databricks_to_duckdb_sql(const std::string& sql,
                                     const std::function<std::filesystem::path(const std::string&)>& local_path);

struct DatabricksUploadSeen {
  std::string path;
  std::string sha256;    // of the bytes sent
  bool created = false;  // false: answered 409, the file was there
};

struct DatabricksStatementSeen {
  std::string statement;
  std::string body;  // the request's JSON as sent
};

class DatabricksEmulator {
 public:
  DatabricksEmulator();
  ~DatabricksEmulator();
  DatabricksEmulator(const DatabricksEmulator&) = delete;
  DatabricksEmulator& operator=(const DatabricksEmulator&) = delete;

  static constexpr const char* kToken = "dapi0123456789abcdef-test";
  static constexpr const char* kWarehouse = "a1b2c3d4e5f60718";
  static constexpr const char* kCatalog = "lakehouse";
  static constexpr const char* kSchema = "analytics";
  static constexpr const char* kVolume = "landing";

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::vector<std::string>> query(const std::string& duckdb_sql);
  std::vector<DatabricksUploadSeen> uploads() const;
  std::vector<DatabricksStatementSeen> statements() const;
  // (file, table) pairs COPY INTO loaded, in order; and how many times a file already loaded was skipped.
  std::vector<std::pair<std::string, std::string>> loads() const;
  int skipped_loads() const;
  // Files now in the volume (paths).
  std::vector<std::string> volume_files() const;
  void answer_pending(bool on);  // statements answer PENDING at once; their result comes with a GET
  // Statements that start from now on and contain `containing` (case-insensitive) run `delay` later; a COPY INTO
  // holds its files meanwhile, as one still loading them. A zero delay turns it off for statements that start next.
  void slow_statements(const std::string& containing, std::chrono::milliseconds delay);
  // The texts of the statements still running (whether or not their client is still there).
  std::vector<std::string> running_statements() const;
  // The next `n` COPY INTOs fail with COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED (SQLSTATE 25000, "try again
  // later"), as when an orphaned COPY INTO of the same files still runs.
  void fail_copies_as_duplicated(int n);
  int copies_left_to_fail() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

DatabricksEmulator& SharedDatabricks();
// A Databricks sink's YAML flow line for `table` through `endpoint`; `extra` starts with ", ".
std::string databricks_sink(const std::string& endpoint, const std::string& table, const std::string& extra = "");

}  // namespace skippr::test
