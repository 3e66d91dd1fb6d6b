// BigQuery's REST API v2 with a service account (clients/google): jobs with ids the caller derives, so that a job
// sent twice runs once (BigQuery answers the second jobs.insert with 409 Already Exists, and jobs.get tells how the
// first ended), load jobs uploaded as multipart NDJSON, synchronous read-only queries, and tables.get /
// datasets.get. Failures are typed: kConfig (refused credentials, a missing dataset, an invalid query or load),
// kUnavailable (not accepted: throttled, no connection), kUnknownOutcome (sent, no answer: send the same job id).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/google/google_credentials.h"
#include "clients/http/http_request.h"
#include "core/result.h"

namespace skippr {

struct BigQueryConfig {
  std::string project;
  std::string location = "US";
  std::string endpoint;  // empty: https://bigquery.googleapis.com
  GoogleServiceAccount account;
  std::string where;  // "sink 'x'"
  double request_timeout_seconds = 120;
  double job_timeout_seconds = 900;  // a job still running after this is an unknown outcome
};

struct BigQueryRows {
  std::vector<std::vector<std::optional<std::string>>> rows;
};

class BigQueryClient {
 public:
  explicit BigQueryClient(BigQueryConfig config);

  // kConfig naming the dataset when it does not exist (or the account may not see it).
  Status check_dataset(const std::string& dataset);
  // The table's schema fields (name, type), or nullopt when there is no such table.
  Result<std::optional<std::vector<std::pair<std::string, std::string>>>> table_fields(const std::string& dataset,
                                                                                       const std::string& table);
  // The names of the dataset's tables (tables.list, every page).
  Result<std::vector<std::string>> list_tables(const std::string& dataset);
  // A read-only query (jobs.query), rows as text.
  Result<BigQueryRows> query(const std::string& sql);
  // Runs job `job_id` (a query job of `sql`, or a load job of `ndjson` into dataset.table with `schema` and
  // `write_disposition`) to its end: true when it succeeded, false when it ended with an error (`error` says which):
  // that id is spent, a new attempt needs a new one. A 409 on insert reads the existing job instead, and sets
  // `existed` (the job ran before this call).
  Result<bool> run_query_job(const std::string& job_id, const std::string& sql, std::string* error, bool* existed);
  Result<bool> run_load_job(const std::string& job_id, const std::string& dataset, const std::string& table,
                            const nlohmann::json& schema_fields, std::string_view ndjson,
                            const std::string& write_disposition, std::string* error, bool* existed);
  const std::string& where() const { return where_; }

 private:
  Result<std::string> bearer();
  Result<HttpResponse> send(const std::string& method, const std::string& url, std::string_view body,
                            const std::string& content_type);
  Status status_error(const HttpResponse& response, std::string_view doing);
  // Inserts the job (a 409 means it exists) and polls it until DONE.
  Result<bool> run_job(const std::string& job_id, const std::string& url, std::string_view body,
                       const std::string& content_type, std::string* error, bool* existed);

  BigQueryConfig config_;
  std::string where_;
  GoogleTokenSource tokens_;
};

// A job id from `key` (letters, digits, '_' and '-', as BigQuery allows): the same key, the same id, in every process.
std::string bigquery_job_id(std::string_view prefix, std::string_view key);
// `name` in backticks, as GoogleSQL quotes a project, dataset, table or column.
std::string bq_quote_identifier(std::string_view name);
// A GoogleSQL string literal ('...' with backslash escapes).
std::string bq_quote_literal(std::string_view text);
// An error reason ("rateLimitExceeded", "jobInternalError", ...) that a later attempt may not meet, for an HTTP error
// and for a job's errorResult alike: what the official client retries (python-bigquery's retry.py, its reasons
// and job_retry_reasons) and BigQuery's documented transient job errors.
bool bigquery_transient_reason(std::string_view reason);

}  // namespace skippr
