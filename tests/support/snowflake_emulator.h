// Test support: an emulator of the part of Snowflake's SQL API v2 the Snowflake sink calls, run in the test process on
// a free loopback port, executing the SQL for real on an in-memory DuckDB. What it implements, as the API reference
// defines it: POST /api/v2/statements (requestId and retry query parameters, the JSON body's statement, database,
// schema, warehouse and parameters.MULTI_STATEMENT_COUNT), GET /api/v2/statements/{handle}; key-pair JWT checked
// (RS256 signature against the user's registered public key, iss = ACCOUNT.USER.SHA256:<fingerprint>, sub, exp);
// 200 ResultSet / 202 QueryStatus / 422 QueryFailureStatus / 401 bodies with Snowflake's codes; a requestId resent
// with retry=true answered from its first execution (finished or not), not run again, only for requests of at most
// 1 MB of text, as documented; 202 after a wait (45 s by default) or when asked to. Requests run concurrently, each
// execution on a thread and a DuckDB connection of its own that outlive the request and its client; UPDATE, DELETE
// and MERGE lock their table to the end of the transaction, whose snapshot is taken at its first statement, after
// that lock (READ COMMITTED as far as snapshot isolation allows: stricter than Snowflake for the statements after).
// COPY INTO <table> (<columns>) FROM (SELECT <$1:"field" expressions> FROM @<stage>/<path>/) FILES = (...)
// FILE_FORMAT = (TYPE = JSON) [FORCE = TRUE] from a stage the test registers: each file loaded into a table once
// (Snowflake's load history), skipped the second time unless FORCE, the history kept only when the request's
// transaction commits. What it does not: result partitions, bind variables, internal stages and PUT, other file
// formats and COPY options, roles and grants, lock timeouts and deadlocks, names in two spellings. Snowflake SQL
// becomes DuckDB SQL in one place (to_duckdb_sql, with its list of rewrites). Dropped responses come from
// tests/support/fault_proxy in front of it.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace skippr::test {

struct SnowflakeEmulatorOptions {
  std::string account = "TESTORG-SKIPPR";
  std::string user = "LOADER";
  std::string public_key_pem;  // the user's RSA_PUBLIC_KEY
  std::vector<std::string> databases = {"ANALYTICS"};
  std::string warehouse = "LOAD_WH";
};

// Every request the emulator received, in order.
struct SnowflakeRequestSeen {
  std::string request_id;
  bool retry = false;
  bool executed = false;  // false: answered from an earlier execution of the same requestId
  std::string statement;
  std::string body;                            // the request's JSON as sent
  std::map<std::string, std::string> headers;  // Authorization's token left out
};

// Snowflake SQL -> DuckDB SQL (exposed for its unit test).
std::string to_duckdb_sql(const std::string& snowflake_sql);

class SnowflakeEmulator {
 public:
  explicit SnowflakeEmulator(SnowflakeEmulatorOptions options);
  ~SnowflakeEmulator();
  SnowflakeEmulator(const SnowflakeEmulator&) = delete;
  SnowflakeEmulator& operator=(const SnowflakeEmulator&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // DuckDB SQL on the emulator's database, as a reader of the warehouse would run it: rows of text ("NULL" for null).
  std::vector<std::vector<std::string>> query(const std::string& duckdb_sql);
  std::vector<SnowflakeRequestSeen> requests() const;
  // From now on every statement is answered 202 (still running) and its result fetched by handle.
  void answer_async(bool on);
  // How long a POST waits for its execution before answering 202 (Snowflake: 45 s).
  void answer_within(std::chrono::milliseconds wait);
  // Statements whose text contains `containing` (case-insensitive) take `delay` more after they ran, holding their
  // transaction's locks, before the request goes on (0: none do); the first `times` such statements only (-1: all).
  void slow_statements(const std::string& containing, std::chrono::milliseconds delay, int times = -1);
  // Executions started and not finished (they run on after their client is gone).
  int running_executions() const;
  // An external stage `name` (as statements write it after the @) whose files `fetch` reads: the path under the
  // stage's URL -> the file's bytes, nullopt when there is none.
  void add_stage(const std::string& name, std::function<std::optional<std::string>(const std::string&)> fetch);
  // (file, table) pairs COPY INTO loaded, in order (FORCE loads included), and the files it skipped as loaded before.
  std::vector<std::pair<std::string, std::string>> loads() const;
  int skipped_loads() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

// One key pair and one emulator per test binary; the key's user is LOADER of account TESTORG-SKIPPR.
const std::filesystem::path& snowflake_test_private_key();
SnowflakeEmulator& SharedSnowflake();
// A Snowflake sink's YAML flow line for `table` in ANALYTICS.PUBLIC through `endpoint`; `extra` starts with ", ".
std::string snowflake_sink(const std::string& endpoint, const std::string& table, const std::string& extra = "");

}  // namespace skippr::test
