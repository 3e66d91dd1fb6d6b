#include "clients/bigquery/bigquery_client.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <chrono>
#include <thread>

#include "clients/http/http_request.h"
#include "clients/sql/sql_literals.h"

namespace skippr {
namespace {

// The first error's reason ("rateLimitExceeded", "notFound", ...), as BigQuery's error body gives it.
std::string error_reason(const HttpResponse& response) {
  const auto json = nlohmann::json::parse(response.body, nullptr, false);
  if (!json.is_object() || !json.contains("error") || !json["error"].is_object()) return "";
  const auto& errors = json["error"].value("errors", nlohmann::json::array());
  return errors.is_array() && !errors.empty() && errors[0].is_object() ? errors[0].value("reason", "") : "";
}

// What the official client (google-cloud-bigquery's retry.py) retries: these statuses, and these reasons whatever
// the status — rateLimitExceeded comes as 403, which alone would read as missing roles.
bool retry_later(const HttpResponse& response) {
  const long status = response.status;
  if (status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504) return true;
  if (status < 400) return false;
  return bigquery_transient_reason(error_reason(response));
}

std::string job_error(const nlohmann::json& job) {
  const auto& status = job.contains("status") ? job["status"] : nlohmann::json::object();
  if (!status.contains("errorResult")) return "";
  const auto& e = status["errorResult"];
  return fmt::format("{}: {}", e.value("reason", "error"), e.value("message", ""));
}

}  // namespace

std::string bigquery_job_id(std::string_view prefix, std::string_view key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  std::string id(prefix);
  for (unsigned int i = 0; i < 16; ++i) id += fmt::format("{:02x}", digest[i]);
  return id;
}

std::string bq_quote_identifier(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`' || c == '\\') out += '\\';
    out += c;
  }
  return out + "`";
}

std::string bq_quote_literal(std::string_view text) { return backslash_quoted_literal(text); }

bool bigquery_transient_reason(std::string_view reason) {
  for (std::string_view transient : {"rateLimitExceeded", "backendError", "internalError", "badGateway",
                                     "jobBackendError", "jobInternalError", "jobRateLimitExceeded"}) {
    if (reason == transient) return true;
  }
  return false;
}

BigQueryClient::BigQueryClient(BigQueryConfig config)
    : config_(std::move(config)), tokens_(config_.account, kBigQueryScope) {
  if (config_.endpoint.empty()) config_.endpoint = "https://bigquery.googleapis.com";
  while (config_.endpoint.ends_with('/')) config_.endpoint.pop_back();
  where_ = fmt::format("{}: BigQuery project {}", config_.where, config_.project);
}

Result<std::string> BigQueryClient::bearer() {
  auto token = tokens_.token();
  if (!token) return std::unexpected(token.error());
  return "Authorization: Bearer " + *token;
}

Result<HttpResponse> BigQueryClient::send(const std::string& method, const std::string& url, std::string_view body,
                                          const std::string& content_type) {
  auto auth = bearer();
  if (!auth) return std::unexpected(auth.error());
  HttpRequest request;
  request.method = method;
  request.url = url;
  request.headers = {*auth, "Accept: application/json", "User-Agent: skipprd/1"};
  if (!content_type.empty()) request.headers.push_back("Content-Type: " + content_type);
  request.body = body;
  request.timeout_seconds = config_.request_timeout_seconds;
  // Reads and jobs.query (reads, and DDL with IF NOT EXISTS) may be sent again as they are: throttling and 5xx are
  // waited out here, up to a minute. A job insert is retried by run_job, which knows its id.
  const bool resendable = method == "GET" || url.ends_with("/queries");
  double pause = 0.2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool refreshed = false;
  while (true) {
    auto response = http_send(request);
    // A token BigQuery no longer takes (expired early, revoked) was refused before anything ran: once, with a new one.
    if (response && response->status == 401 && !refreshed) {
      refreshed = true;
      tokens_.invalidate();
      auto renewed = bearer();
      if (!renewed) return std::unexpected(renewed.error());
      request.headers[0] = *renewed;
      continue;
    }
    if (!resendable || !response || !retry_later(*response) || std::chrono::steady_clock::now() > deadline) {
      return response;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(pause * 2, 5.0);
  }
}

Status BigQueryClient::status_error(const HttpResponse& response, std::string_view doing) {
  const auto json = nlohmann::json::parse(response.body, nullptr, false);
  std::string message;
  if (json.is_object() && json.contains("error") && json["error"].is_object()) {
    message = json["error"].value("message", "");
  }
  if (message.size() > 300) message = message.substr(0, 300) + "...";
  if (retry_later(response)) {
    return fail(ErrorKind::kUnavailable, fmt::format("{}: HTTP {} {} to {}: {}", where_, response.status,
                                                     error_reason(response), doing, message));
  }
  if (response.status == 401 || response.status == 403) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} refused {} (HTTP {}: {}); check the service account's roles on the project "
                            "(BigQuery Data Editor and Job User)",
                            where_, doing, response.status, message));
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{} could not {} (HTTP {}: {})", where_, doing, response.status, message));
}

Status BigQueryClient::check_dataset(const std::string& dataset) {
  auto response = send("GET",
                       fmt::format("{}/bigquery/v2/projects/{}/datasets/{}", config_.endpoint,
                                   url_encode(config_.project), url_encode(dataset)),
                       "", "");
  if (!response) return std::unexpected(response.error());
  if (response->status == 404) {
    return fail(ErrorKind::kConfig, fmt::format("{}: dataset {} does not exist (or the service account cannot see it); "
                                                "create it in location {} or correct the sink's dataset",
                                                where_, dataset, config_.location));
  }
  if (response->status != 200) return status_error(*response, "read dataset " + dataset);
  return ok();
}

Result<std::optional<std::vector<std::pair<std::string, std::string>>>> BigQueryClient::table_fields(
    const std::string& dataset, const std::string& table) {
  auto response = send("GET",
                       fmt::format("{}/bigquery/v2/projects/{}/datasets/{}/tables/{}", config_.endpoint,
                                   url_encode(config_.project), url_encode(dataset), url_encode(table)),
                       "", "");
  if (!response) return std::unexpected(response.error());
  if (response->status == 404) return std::optional<std::vector<std::pair<std::string, std::string>>>();
  if (response->status != 200) return std::unexpected(status_error(*response, "read table " + table).error());
  const auto json = nlohmann::json::parse(response->body, nullptr, false);
  std::vector<std::pair<std::string, std::string>> fields;
  if (json.is_object() && json.contains("schema")) {
    for (const auto& f : json["schema"].value("fields", nlohmann::json::array())) {
      fields.emplace_back(f.value("name", ""), f.value("type", ""));
    }
  }
  return std::optional(std::move(fields));
}

Result<std::vector<std::string>> BigQueryClient::list_tables(const std::string& dataset) {
  std::vector<std::string> names;
  std::string page;
  do {
    auto response = send("GET",
                         fmt::format("{}/bigquery/v2/projects/{}/datasets/{}/tables?maxResults=1000{}",
                                     config_.endpoint, url_encode(config_.project), url_encode(dataset),
                                     page.empty() ? "" : "&pageToken=" + url_encode(page)),
                         "", "");
    if (!response) return std::unexpected(response.error());
    if (response->status != 200) return std::unexpected(status_error(*response, "list tables").error());
    const auto json = nlohmann::json::parse(response->body, nullptr, false);
    if (!json.is_object()) break;
    for (const auto& t : json.value("tables", nlohmann::json::array())) {
      if (t.is_object() && t.contains("tableReference")) names.push_back(t["tableReference"].value("tableId", ""));
    }
    page = json.value("nextPageToken", "");
  } while (!page.empty());
  return names;
}

Result<BigQueryRows> BigQueryClient::query(const std::string& sql) {
  const nlohmann::json body = {
      {"query", sql}, {"useLegacySql", false}, {"location", config_.location}, {"timeoutMs", 60000}};
  const std::string text = body.dump();
  auto response =
      send("POST", fmt::format("{}/bigquery/v2/projects/{}/queries", config_.endpoint, url_encode(config_.project)),
           text, "application/json");
  if (!response) return std::unexpected(response.error());
  if (response->status != 200) return std::unexpected(status_error(*response, "run a query").error());
  const auto json = nlohmann::json::parse(response->body, nullptr, false);
  if (!json.is_object() || !json.value("jobComplete", false)) {
    return fail(ErrorKind::kUnavailable, fmt::format("{}: a query did not complete in time", where_));
  }
  BigQueryRows out;
  for (const auto& row : json.value("rows", nlohmann::json::array())) {
    std::vector<std::optional<std::string>> values;
    for (const auto& cell : row.value("f", nlohmann::json::array())) {
      const auto& v = cell.contains("v") ? cell["v"] : nlohmann::json();
      values.push_back(v.is_null() ? std::nullopt : std::optional(v.is_string() ? v.get<std::string>() : v.dump()));
    }
    out.rows.push_back(std::move(values));
  }
  return out;
}

Result<bool> BigQueryClient::run_job(const std::string& job_id, const std::string& url, std::string_view body,
                                     const std::string& content_type, std::string* error, bool* existed) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(config_.job_timeout_seconds);
  double pause = 0.1;
  nlohmann::json job;
  // jobs.insert: a resend of the same id (after a lost answer) meets 409 and reads the job instead.
  while (true) {
    auto response = send("POST", url, body, content_type);
    if (!response) {
      if (response.error().kind == ErrorKind::kUnknownOutcome) {
        return fail(ErrorKind::kUnknownOutcome,
                    fmt::format("{}: no answer to job {}; it is sent again under the same id", where_, job_id));
      }
      return std::unexpected(response.error());
    }
    if (response->status == 200 || response->status == 201 || response->status == 409) {
      if (response->status != 409) job = nlohmann::json::parse(response->body, nullptr, false);
      if (existed) *existed = response->status == 409;
      break;
    }
    // A refused insert (throttled: 429, or 403 rateLimitExceeded) did not create the job: the same id is sent again.
    if (!retry_later(*response) || std::chrono::steady_clock::now() > deadline) {
      return std::unexpected(status_error(*response, "insert job " + job_id).error());
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(pause * 2, 5.0);
  }
  const std::string get_url = fmt::format("{}/bigquery/v2/projects/{}/jobs/{}?location={}", config_.endpoint,
                                          url_encode(config_.project), job_id, url_encode(config_.location));
  pause = 0.05;
  bool first_read = true;
  while (!job.is_object() || !job.contains("status") || job["status"].value("state", "") != "DONE") {
    if (std::chrono::steady_clock::now() > deadline) {
      return fail(ErrorKind::kUnknownOutcome,
                  fmt::format("{}: job {} was still running after {} s; it is asked for again under the same id",
                              where_, job_id, config_.job_timeout_seconds));
    }
    // Every read after the first waits, whether the last one failed, was throttled or found the job running.
    if (!first_read || (job.is_object() && job.contains("status"))) {
      std::this_thread::sleep_for(std::chrono::duration<double>(pause));
      pause = std::min(pause * 2, 2.0);
    }
    first_read = false;
    auto response = send("GET", get_url, "", "");
    if (!response) continue;  // reading a job changes nothing: ask again
    if (response->status == 200) {
      job = nlohmann::json::parse(response->body, nullptr, false);
      if (!job.is_object() || !job.contains("status")) job = nlohmann::json::object({{"status", {{"state", "?"}}}});
      continue;
    }
    // The job was created (the insert was answered, or 409 said it exists): a 404 is jobs.get not seeing it yet,
    // which BigQuery does right after a 409 (the official client waits it out too, python-bigquery issue 2134).
    if (response->status == 404) continue;
    if (!retry_later(*response)) return std::unexpected(status_error(*response, "read job " + job_id).error());
  }
  const std::string failed = job_error(job);
  if (error) *error = failed;
  return failed.empty();
}

Result<bool> BigQueryClient::run_query_job(const std::string& job_id, const std::string& sql, std::string* error,
                                           bool* existed) {
  const nlohmann::json job = {
      {"jobReference", {{"projectId", config_.project}, {"jobId", job_id}, {"location", config_.location}}},
      {"configuration", {{"query", {{"query", sql}, {"useLegacySql", false}}}}}};
  const std::string body = job.dump();
  return run_job(job_id, fmt::format("{}/bigquery/v2/projects/{}/jobs", config_.endpoint, url_encode(config_.project)),
                 body, "application/json", error, existed);
}

Result<bool> BigQueryClient::run_load_job(const std::string& job_id, const std::string& dataset,
                                          const std::string& table, const nlohmann::json& schema_fields,
                                          std::string_view ndjson, const std::string& write_disposition,
                                          std::string* error, bool* existed) {
  const nlohmann::json job = {
      {"jobReference", {{"projectId", config_.project}, {"jobId", job_id}, {"location", config_.location}}},
      {"configuration",
       {{"load",
         {{"destinationTable", {{"projectId", config_.project}, {"datasetId", dataset}, {"tableId", table}}},
          {"sourceFormat", "NEWLINE_DELIMITED_JSON"},
          {"schema", {{"fields", schema_fields}}},
          {"createDisposition", "CREATE_IF_NEEDED"},
          {"writeDisposition", write_disposition}}}}}};
  const std::string boundary = "skippr_" + job_id;
  std::string body;
  body.reserve(ndjson.size() + 1024);
  body += "--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" + job.dump() + "\r\n";
  body += "--" + boundary + "\r\nContent-Type: application/octet-stream\r\n\r\n";
  body += ndjson;
  body += "\r\n--" + boundary + "--\r\n";
  return run_job(job_id,
                 fmt::format("{}/upload/bigquery/v2/projects/{}/jobs?uploadType=multipart", config_.endpoint,
                             url_encode(config_.project)),
                 body, "multipart/related; boundary=" + boundary, error, existed);
}

}  // namespace skippr
