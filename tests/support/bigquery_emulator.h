// Test support: an emulator of the part of BigQuery's REST API v2 the BigQuery sink calls, in the test process on a
// free loopback port, the SQL run for real on an in-memory DuckDB (a dataset is a schema). What it implements, as the
// API reference defines it: a service account's OAuth token endpoint (JWT RS256 verified against the account's public
// key; iss, aud, scope, expiry checked; 400 invalid_grant otherwise) and Bearer tokens on every call (401
// otherwise); datasets.get and tables.get (404 Not found), jobs.query, jobs.insert of query jobs (GoogleSQL scripts
// with BEGIN TRANSACTION / COMMIT TRANSACTION) and of multipart load jobs (NEWLINE_DELIMITED_JSON, schema,
// CREATE_IF_NEEDED, WRITE_APPEND / WRITE_TRUNCATE), jobs.get; a job id used before answered with 409 Already Exists
// (reason "duplicate"); jobs left RUNNING until read when asked; 403 rateLimitExceeded, 404 on jobs.get right after a
// 409, and jobs ending in transient reasons (jobInternalError, ...) when injected (BigQueryFaults).
// Jobs run as BigQuery runs them: each on a thread and a DuckDB connection of its own, on after the HTTP request and
// the client that inserted it are gone (a SIGKILLed client's job still commits). jobs.insert answers within about a
// second, RUNNING when the job has not ended; jobs.get says RUNNING until it has; jobs.query waits up to timeoutMs,
// then answers jobComplete false. Transactions are snapshot-isolated and run side by side (DuckDB's MVCC). Mutating
// DML (UPDATE, DELETE, MERGE, TRUNCATE; an INSERT only appends and meets no one) follows BigQuery's rule per table: a
// transaction that mutates a table another open transaction mutates, or one whose snapshot predates another's
// committed mutation of it, fails the job with "Transaction is aborted due to concurrent update against table ..."
// (reason invalidQuery; so does a write DuckDB finds in conflict); a mutating statement outside a transaction is
// queued until the transaction mutating its table ends, then runs on what it committed.
// Not covered: partitions and clustering (conflicts are per table, never per partition), streaming inserts, quotas
// and the limits of the DML queue, IAM beyond one account. GoogleSQL becomes DuckDB SQL in one place
// (bigquery_to_duckdb_sql). Lost answers come from tests/support/fault_proxy in front of it.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace skippr::test {

std::string bigquery_to_duckdb_sql(const std::string& googlesql, const std::string& project);

struct BigQueryJobSeen {
  std::string job_id;
  std::string kind;        // "load" or "query"
  bool duplicate = false;  // answered 409: the id had run before
  std::string resource;    // the job resource as sent (JSON)
};

// Faults BigQuery's documentation and official client describe, each applied to the next requests that can meet it.
struct BigQueryFaults {
  int rate_limited_inserts = 0;      // jobs.insert answered 403 rateLimitExceeded, the job not created
  int not_found_after_conflict = 0;  // a jobs.insert answered 409, then the job's next jobs.get 404 (once)
  int failed_jobs = 0;               // jobs that end DONE with `failed_job_reason`, having changed nothing
  std::string failed_job_reason = "jobInternalError";
};

class BigQueryEmulator {
 public:
  // Writes a service-account key file for its one account into a folder of its own.
  BigQueryEmulator();
  ~BigQueryEmulator();
  BigQueryEmulator(const BigQueryEmulator&) = delete;
  BigQueryEmulator& operator=(const BigQueryEmulator&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  static constexpr const char* kProject = "skippr-test";
  static constexpr const char* kDataset = "analytics";
  const std::filesystem::path& credentials_file() const;
  // A key file of an account the emulator does not know (its token request is refused).
  const std::filesystem::path& stranger_credentials_file() const;
  std::vector<std::vector<std::string>> query(const std::string& duckdb_sql);
  std::vector<BigQueryJobSeen> jobs() const;
  void answer_running(bool on);  // jobs.insert answers RUNNING; the first jobs.get after it, DONE
  // Statements whose text contains `containing` (case-insensitive) wait `delay` before they run (0: none do); a
  // statement already waiting keeps its delay.
  void slow_statements(const std::string& containing, std::chrono::milliseconds delay);
  // The ids of the jobs inserted that have not ended (they run on after their client is gone).
  std::vector<std::string> running_jobs() const;
  void inject(const BigQueryFaults& faults);  // replaces what was left
  BigQueryFaults faults_left() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

BigQueryEmulator& SharedBigQuery();
// A BigQuery sink's YAML flow line for `table` through `endpoint`; `extra` starts with ", ".
std::string bigquery_sink(const std::string& endpoint, const std::string& table, const std::string& extra = "");

}  // namespace skippr::test
