// Test support: an emulator of the parts of Databricks' REST API the Databricks sink calls, in the test process on a
// free loopback port, the SQL run for real on an in-memory DuckDB (a catalog is an attached database, a schema its
// schema) and volume files kept in a folder. What it implements, as the API reference defines it:
// - Files API: PUT /api/2.0/fs/files{path} (overwrite=false answers 409 ALREADY_EXISTS for a file that is there;
//   parents made; 404 outside a volume), GET and DELETE of a file (404 NOT_FOUND), GET /api/2.0/fs/directories{path}
//   (contents with name / path / is_directory / file_size, paged by `page_size` with next_page_token);
// - Statement Execution API: POST /api/2.0/sql/statements (statement, warehouse_id, catalog, schema, wait_timeout,
//   on_wait_timeout, format JSON_ARRAY, disposition INLINE), GET /api/2.0/sql/statements/{id}, POST .../cancel;
//   StatementResponse bodies (status.state SUCCEEDED / FAILED with error.error_code and message, manifest.schema,
//   result.data_array of strings); PENDING answers polled by id when asked to;
// - COPY INTO ... FROM (SELECT ... FROM '<folder>') FILEFORMAT = JSON FILES = (...) with primitivesAsString: each
//   file loaded into a table once, a file loaded before skipped (the documented idempotency), tracked per table;
//   read_files('<file>', format => 'json', primitivesAsString => true) in a query;
// - a bearer token checked on every call (401 otherwise), an unknown warehouse 404.
// Not covered: Delta's concurrency and time travel, COPY INTO's other formats and options, VARIANT, result chunks
// beyond the first, OAuth. Databricks SQL becomes DuckDB SQL in one place (databricks_to_duckdb_sql). Lost answers come
// from tests/support/fault_proxy in front of it.
#pragma once

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
  void answer_pending(bool on);  // statements answer PENDING; their result comes with the first GET
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
