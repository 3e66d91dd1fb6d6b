#include "clients/databricks/databricks_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "clients/http/http_request.h"
#include "clients/sql/sql_literals.h"

namespace skippr {
namespace {

constexpr auto kRetryFor = std::chrono::seconds(120);

// A request the service did not take (throttled, briefly unavailable): worth sending again as it is.
bool not_taken(long status) { return status == 429 || status == 503; }
// An answer that says nothing of whether the request was acted on.
bool unknown_answer(long status) { return status == 408 || status == 500 || status == 502 || status == 504; }

// The statement errors that say "not now" rather than "never": the StatementResponse's transient error codes, and
// the SQLSTATEs of a lost race (2D521: Delta's concurrent-modification errors, which its documentation says to
// retry; class 40: transaction rollback), and the error classes whose message says to try again.
bool transient_error(std::string_view code, std::string_view sql_state, std::string_view message) {
  if (sql_state == "2D521" || sql_state.starts_with("40")) return true;
  // A COPY INTO of files a concurrent COPY INTO is committing (an orphan of a dead process, say): Databricks says
  // "please try again later"; once the other commits, the files are in the load history and are skipped.
  if (message.find("COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED") != std::string_view::npos) return true;
  for (std::string_view c :
       {"TEMPORARILY_UNAVAILABLE", "SERVICE_UNDER_MAINTENANCE", "WORKSPACE_TEMPORARILY_UNAVAILABLE",
        "RESOURCE_EXHAUSTED", "ABORTED", "CANCELLED", "DEADLINE_EXCEEDED", "IO_ERROR", "INTERNAL_ERROR"}) {
    if (code == c) return true;
  }
  return false;
}

std::string shortened(std::string text) {
  if (text.size() > 400) text = text.substr(0, 400) + "...";
  return text;
}

std::string state_of(const nlohmann::json& response) {
  return response.is_object() && response.contains("status") && response["status"].is_object()
             ? response["status"].value("state", "")
             : std::string();
}

bool still_running(const nlohmann::json& response) {
  const std::string state = state_of(response);
  return state == "PENDING" || state == "RUNNING";
}

void append_rows(const nlohmann::json& result, DatabricksRows& rows) {
  if (!result.is_object() || !result.contains("data_array")) return;
  for (const auto& row : result["data_array"]) {
    std::vector<std::optional<std::string>> values;
    for (const auto& v : row) {
      values.push_back(v.is_null() ? std::nullopt : std::optional(v.is_string() ? v.get<std::string>() : v.dump()));
    }
    rows.push_back(std::move(values));
  }
}

}  // namespace

std::string dbx_quote_identifier(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out += '`';
    out += c;
  }
  return out + "`";
}

std::string dbx_quote_literal(std::string_view text) { return backslash_quoted_literal(text); }

std::string files_api_path(std::string_view absolute_path) { return url_encode(absolute_path, /*keep_slash=*/true); }

DatabricksClient::DatabricksClient(DatabricksConfig config) : config_(std::move(config)) {
  auto& c = config_;
  if (c.endpoint.empty()) {
    c.endpoint = c.host.starts_with("http://") || c.host.starts_with("https://") ? c.host : "https://" + c.host;
  }
  while (c.endpoint.ends_with('/')) c.endpoint.pop_back();
  where_ = fmt::format("{}: Databricks {}", c.where, display_url(c.endpoint));
}

Status DatabricksClient::refused(const Reply& reply, std::string_view doing) const {
  const auto json = nlohmann::json::parse(reply.body, nullptr, false);
  const std::string code = json.is_object() ? json.value("error_code", "") : "";
  const std::string message = shortened(json.is_object() ? json.value("message", "") : "");
  if (reply.status == 401 || reply.status == 403) {
    return fail(ErrorKind::kConfig, fmt::format("{} refused the token for {} (HTTP {} {}: {}); check token and that "
                                                "its user may use warehouse {} and the volume",
                                                where_, doing, reply.status, code, message, config_.warehouse_id));
  }
  if (reply.status >= 400 && reply.status < 500) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} could not do {}: HTTP {} {}: {}", where_, doing, reply.status, code, message));
  }
  return fail(ErrorKind::kUnavailable,
              fmt::format("{} answered HTTP {} {} to {}: {}", where_, reply.status, code, doing, message));
}

Result<DatabricksClient::Reply> DatabricksClient::send(const std::string& method, const std::string& path_and_query,
                                                       std::string_view body, const char* content_type,
                                                       std::string_view doing, bool repeatable) {
  const auto deadline = std::chrono::steady_clock::now() + kRetryFor;
  double backoff = 0.2;
  while (true) {
    HttpRequest request;
    request.method = method;
    request.url = config_.endpoint + path_and_query;
    request.headers = {"Authorization: Bearer " + config_.token, "Accept: application/json", "User-Agent: skipprd/1"};
    if (content_type) request.headers.push_back(std::string("Content-Type: ") + content_type);
    request.body = body;
    request.timeout_seconds = config_.request_timeout_seconds;
    if (body.size() > (1 << 20)) allow_long_transfer(request);
    auto response = http_send(request);
    // No answer: the engine's retry (after its own backoff) sends the same request again, which every request of
    // this client allows (see the header); kUnknownOutcome tells it an earlier attempt may have landed.
    if (!response) {
      return fail(response.error().kind, fmt::format("{}: {}: {}", where_, doing, response.error().message));
    }
    const bool again = not_taken(response->status) || (repeatable && unknown_answer(response->status));
    if (!again && unknown_answer(response->status)) {
      return fail(ErrorKind::kUnknownOutcome, fmt::format("{}: {} was answered HTTP {}; it may have been acted on",
                                                          where_, doing, response->status));
    }
    if (!again) return Reply{response->status, std::move(response->body)};
    if (std::chrono::steady_clock::now() > deadline) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("{}: {} was answered HTTP {} for two minutes", where_, doing, response->status));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 5.0);
  }
}

Result<DatabricksRows> DatabricksClient::execute(std::string_view sql, bool write) {
  // A read waits for its answer (up to 10 s, the API's default, inside the HTTP timeout); a write only for its id.
  const int wait = write ? 0 : std::clamp(static_cast<int>(config_.request_timeout_seconds) - 10, 0, 10);
  nlohmann::json body = {{"statement", sql},
                         {"warehouse_id", config_.warehouse_id},
                         {"wait_timeout", wait < 5 ? std::string("0s") : fmt::format("{}s", wait)},
                         {"on_wait_timeout", "CONTINUE"},
                         {"format", "JSON_ARRAY"},
                         {"disposition", "INLINE"}};
  if (!config_.catalog.empty()) body["catalog"] = config_.catalog;
  if (!config_.schema.empty()) body["schema"] = config_.schema;
  const std::string text = body.dump();
  auto reply = send("POST", "/api/2.0/sql/statements", text, "application/json", "a statement", !write);
  if (!reply) return std::unexpected(reply.error());
  if (reply->status != 200) return std::unexpected(refused(*reply, "a statement").error());
  auto response = nlohmann::json::parse(reply->body, nullptr, false);
  const std::string id = response.is_object() ? response.value("statement_id", "") : "";
  if (still_running(response)) {
    if (id.empty()) {
      return fail(ErrorKind::kUnknownOutcome,
                  fmt::format("{}: a statement was accepted without an id to follow; it is sent again", where_));
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(config_.statement_timeout_seconds));
    auto done = poll(id, deadline);
    if (!done) return std::unexpected(done.error());
    response = nlohmann::json::parse(*done, nullptr, false);
    if (still_running(response)) {
      // Asked to stop, then followed to its end, so it cannot run beside the copy sent next.
      send("POST", "/api/2.0/sql/statements/" + id + "/cancel", "{}", "application/json", "a cancel");
      auto ended = poll(id, std::chrono::steady_clock::now() + kRetryFor);
      if (!ended) return std::unexpected(ended.error());
      response = nlohmann::json::parse(*ended, nullptr, false);
      if (still_running(response)) {
        return fail(ErrorKind::kUnknownOutcome,
                    fmt::format("{}: statement {} was still running after {} s and did not stop when canceled", where_,
                                id, config_.statement_timeout_seconds));
      }
    }
  }
  return finish(id, response);
}

Result<std::string> DatabricksClient::poll(const std::string& id, std::chrono::steady_clock::time_point deadline) {
  double pause = 0.05;
  std::string body;
  while (true) {
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(pause * 2, 2.0);
    auto polled = send("GET", "/api/2.0/sql/statements/" + id, "", nullptr, "a statement's status");
    if (polled && polled->status == 404) {
      return fail(ErrorKind::kUnknownOutcome,
                  fmt::format("{}: statement {} is no longer known; it is sent again", where_, id));
    }
    if (polled && polled->status != 200) return std::unexpected(refused(*polled, "a statement's status").error());
    if (polled) {
      body = std::move(polled->body);
      if (!still_running(nlohmann::json::parse(body, nullptr, false))) return body;
    }
    // A status read changes nothing: one that got no answer is asked again.
    if (std::chrono::steady_clock::now() > deadline) {
      if (body.empty()) {
        return fail(ErrorKind::kUnknownOutcome,
                    fmt::format("{}: the status of statement {} could not be read", where_, id));
      }
      return body;
    }
  }
}

Result<DatabricksRows> DatabricksClient::finish(const std::string& id, const nlohmann::json& response) {
  const std::string state = state_of(response);
  if (state == "SUCCEEDED") {
    DatabricksRows rows;
    nlohmann::json result = response.contains("result") ? response["result"] : nlohmann::json::object();
    while (true) {
      append_rows(result, rows);
      const std::string next = result.is_object() ? result.value("next_chunk_internal_link", "") : "";
      if (next.empty()) return rows;
      auto chunk = send("GET", next, "", nullptr, "a result chunk");
      if (!chunk) return std::unexpected(chunk.error());
      if (chunk->status != 200) return std::unexpected(refused(*chunk, "a result chunk").error());
      result = nlohmann::json::parse(chunk->body, nullptr, false);
    }
  }
  const auto status = response.is_object() && response.contains("status") ? response["status"] : nlohmann::json();
  const auto error = status.is_object() && status.contains("error") ? status["error"] : nlohmann::json::object();
  const std::string code = error.value("error_code", "");
  const std::string sql_state = status.is_object() ? status.value("sql_state", "") : "";
  const std::string message = shortened(error.value("message", ""));
  if (state == "FAILED" && !transient_error(code, sql_state, message)) {
    // A statement that fails as written (a SQL error, a missing catalog, schema or table) fails the same way every
    // time: a setup mistake, not something a retry mends.
    return fail(ErrorKind::kConfig, fmt::format("{}: statement failed: {} {}", where_, code, message));
  }
  if (state == "FAILED" || state == "CANCELED" || state == "CLOSED") {
    return fail(ErrorKind::kUnavailable, fmt::format("{}: statement {} ended {} ({} {} {}); it is sent again", where_,
                                                     id, state, code, sql_state, message));
  }
  return fail(ErrorKind::kUnknownOutcome,
              fmt::format("{}: statement {} was answered in state '{}'; it is sent again", where_, id, state));
}

Result<UploadOutcome> DatabricksClient::upload(const std::string& path, std::string_view bytes, bool overwrite) {
  const std::string query = overwrite ? "?overwrite=true" : "?overwrite=false";
  auto reply = send("PUT", "/api/2.0/fs/files" + files_api_path(path) + query, bytes, "application/octet-stream",
                    "an upload to " + path);
  if (!reply) return std::unexpected(reply.error());
  if (reply->status == 409 && !overwrite) return UploadOutcome::kAlreadyThere;
  if (reply->status / 100 == 2) return UploadOutcome::kCreated;
  if (reply->status == 404) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: no volume holds {}; create the volume or fix `volume`", where_, path));
  }
  return std::unexpected(refused(*reply, "an upload to " + path).error());
}

Result<std::optional<std::string>> DatabricksClient::download(const std::string& path) {
  auto reply = send("GET", "/api/2.0/fs/files" + files_api_path(path), "", nullptr, "a download of " + path);
  if (!reply) return std::unexpected(reply.error());
  if (reply->status == 404) return std::optional<std::string>();
  if (reply->status != 200) return std::unexpected(refused(*reply, "a download of " + path).error());
  return std::optional(std::move(reply->body));
}

Status DatabricksClient::remove(const std::string& path) {
  auto reply = send("DELETE", "/api/2.0/fs/files" + files_api_path(path), "", nullptr, "a delete of " + path);
  if (!reply) return std::unexpected(reply.error());
  if (reply->status == 404 || reply->status / 100 == 2) return ok();
  return std::unexpected(refused(*reply, "a delete of " + path).error());
}

Result<bool> DatabricksClient::directory_exists(const std::string& directory) {
  auto reply =
      send("HEAD", "/api/2.0/fs/directories" + files_api_path(directory), "", nullptr, "a look at " + directory);
  if (!reply) return std::unexpected(reply.error());
  if (reply->status == 404) return false;
  if (reply->status / 100 == 2) return true;
  return std::unexpected(refused(*reply, "a look at " + directory).error());
}

Result<std::vector<std::string>> DatabricksClient::list_files(const std::string& directory) {
  std::vector<std::string> names;
  std::string token;
  do {
    std::string query = "/api/2.0/fs/directories" + files_api_path(directory);
    if (!token.empty()) query += "?page_token=" + url_encode(token);
    auto reply = send("GET", query, "", nullptr, "a listing of " + directory);
    if (!reply) return std::unexpected(reply.error());
    if (reply->status == 404) return names;
    if (reply->status != 200) return std::unexpected(refused(*reply, "a listing of " + directory).error());
    const auto json = nlohmann::json::parse(reply->body, nullptr, false);
    if (!json.is_object()) return fail(ErrorKind::kUnavailable, fmt::format("{}: a listing was not JSON", where_));
    if (json.contains("contents")) {
      for (const auto& entry : json["contents"]) {
        if (!entry.value("is_directory", false)) names.push_back(entry.value("name", ""));
      }
    }
    token = json.value("next_page_token", "");
  } while (!token.empty());
  return names;
}

}  // namespace skippr
