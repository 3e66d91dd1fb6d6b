#include "clients/snowflake/snowflake_client.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "clients/auth/jwt.h"
#include "clients/http/http_request.h"

namespace skippr {
namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

// A request Snowflake did not take (throttled, briefly unavailable): worth sending again as it is.
// 408: Snowflake cancelled the statement at its timeout (nothing was committed).
bool retry_later(long status) {
  return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// The API sends every value as a string (or null); anything else is shown as its JSON text.
SnowflakeResult parse_result(const nlohmann::json& body) {
  SnowflakeResult result;
  if (!body.is_object()) return result;
  result.handle = body.value("statementHandle", "");
  if (body.contains("data") && body["data"].is_array()) {
    for (const auto& row : body["data"]) {
      std::vector<std::optional<std::string>> values;
      for (const auto& v : row) {
        values.push_back(v.is_null() ? std::nullopt : std::optional(v.is_string() ? v.get<std::string>() : v.dump()));
      }
      result.rows.push_back(std::move(values));
    }
  }
  return result;
}

}  // namespace

std::string sf_quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string sf_quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string snowflake_request_id(std::string_view key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x40);  // the version and variant bits of a v4 UUID
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += fmt::format("{:02x}", digest[i]);
  }
  return hex;
}

std::string snowflake_jwt_account(std::string_view account) {
  std::string name(account);
  if (auto dot = name.find('.'); dot != std::string::npos) name.resize(dot);
  return upper(name);
}

Result<SnowflakeClient> SnowflakeClient::make(SnowflakeConfig config) {
  SnowflakeClient client(std::move(config));
  auto& c = client.config_;
  if (c.endpoint.empty()) c.endpoint = fmt::format("https://{}.snowflakecomputing.com", c.account);
  while (c.endpoint.ends_with('/')) c.endpoint.pop_back();
  client.where_ = fmt::format("{}: Snowflake {}", c.where, display_url(c.endpoint));
  auto fingerprint = public_key_fingerprint(c.private_key_pem, c.key_source);
  if (!fingerprint) return std::unexpected(fingerprint.error());
  client.fingerprint_ = *fingerprint;
  return client;
}

Result<std::string> SnowflakeClient::token() {
  const std::time_t now = std::time(nullptr);
  if (!token_.empty() && now + 60 < token_expires_) return token_;
  const std::string qualified = snowflake_jwt_account(config_.account) + "." + upper(config_.user);
  const nlohmann::json claims = {{"iss", qualified + "." + fingerprint_},
                                 {"sub", qualified},
                                 {"iat", static_cast<int64_t>(now)},
                                 {"exp", static_cast<int64_t>(now) + 3540}};
  auto jwt = sign_rs256_jwt({{"alg", "RS256"}, {"typ", "JWT"}}, claims, config_.private_key_pem, config_.key_source);
  if (!jwt) return std::unexpected(jwt.error());
  token_ = std::move(*jwt);
  token_expires_ = now + 3540;
  return token_;
}

// A statement that failed (422, QueryFailureStatus) for a reason of the moment, not of the statement: its SQLSTATE
// class says the transaction was rolled back (40), the statement was cancelled or waited too long for a lock (57:
// 000625 lock waiters, 000630 statement timeout, 000604 cancelled), the connection or resources failed (08, 53, 58);
// or Snowflake's own code says so. The failed request committed nothing: it is sent again.
static bool transient_statement_error(const std::string& sql_state, const std::string& code) {
  for (std::string_view cls : {"40", "57", "08", "53", "58"}) {
    if (sql_state.starts_with(cls)) return true;
  }
  return code == "000625" || code == "000630" || code == "000604";
}

Status SnowflakeClient::status_error(long status, const std::string& body, std::string_view doing) {
  const auto json = nlohmann::json::parse(body, nullptr, false);
  const std::string code = json.is_object() ? json.value("code", "") : "";
  const std::string sql_state = json.is_object() ? json.value("sqlState", "") : "";
  std::string message = json.is_object() ? json.value("message", "") : "";
  if (message.size() > 300) message = message.substr(0, 300) + "...";
  if (status == 401 || status == 403) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} refused the key-pair login of user {} ({} {}); check account, user and that the "
                            "user's RSA_PUBLIC_KEY is the public half of {}",
                            where_, config_.user, code, message, config_.key_source));
  }
  if (status == 422 && transient_statement_error(sql_state, code)) {
    return fail(ErrorKind::kUnavailable, fmt::format("{}: {} failed for now ({} SQLSTATE {}: {}); it is sent again",
                                                     where_, doing, code, sql_state, message));
  }
  if (status >= 400 && status < 500) {
    // A statement Snowflake cannot run (a compilation error, no warehouse, no such database) fails the same way
    // every time: a setup mistake, not something a retry mends.
    return fail(ErrorKind::kConfig, fmt::format("{} could not run {}: {} {}", where_, doing, code, message));
  }
  return fail(ErrorKind::kUnavailable, fmt::format("{} answered HTTP {} {} to {}", where_, status, code, doing));
}

Result<SnowflakeResult> SnowflakeClient::execute(std::string_view sql, int statement_count,
                                                 const std::string& request_id, bool retry) {
  nlohmann::json body = {{"statement", sql}, {"timeout", static_cast<int64_t>(config_.statement_timeout_seconds)}};
  for (auto [key, value] : {std::pair{"database", &config_.database}, std::pair{"schema", &config_.schema},
                            std::pair{"warehouse", &config_.warehouse}, std::pair{"role", &config_.role}}) {
    if (!value->empty()) body[key] = *value;
  }
  if (statement_count != 1) body["parameters"] = {{"MULTI_STATEMENT_COUNT", std::to_string(statement_count)}};
  const std::string text = body.dump();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(config_.statement_timeout_seconds);
  double backoff = 0.2;
  const std::string doing = statement_count == 1 ? "a statement" : "a transaction";
  while (true) {
    auto jwt = token();
    if (!jwt) return std::unexpected(jwt.error());
    HttpRequest request;
    request.method = "POST";
    request.url =
        fmt::format("{}/api/v2/statements?requestId={}{}", config_.endpoint, request_id, retry ? "&retry=true" : "");
    request.headers = {"Authorization: Bearer " + *jwt, "X-Snowflake-Authorization-Token-Type: KEYPAIR_JWT",
                       "Content-Type: application/json", "Accept: application/json", "User-Agent: skipprd/1"};
    request.body = text;
    request.timeout_seconds = config_.request_timeout_seconds;
    auto response = http_send(request);
    if (!response) {
      if (response.error().kind == ErrorKind::kUnknownOutcome) {
        return fail(ErrorKind::kUnknownOutcome,
                    fmt::format("{}: no answer to {} (requestId {}); it is resent with the same requestId", where_,
                                doing, request_id));
      }
      return fail(response.error().kind, fmt::format("{}: {}", where_, response.error().message));
    }
    // Whatever happens next, Snowflake has seen this id: every later send of it is a retry.
    retry = true;
    if (response->status == 200) return parse_result(nlohmann::json::parse(response->body, nullptr, false));
    if (response->status == 202) {
      const auto accepted = nlohmann::json::parse(response->body, nullptr, false);
      std::string status_url = accepted.is_object() ? accepted.value("statementStatusUrl", "") : "";
      if (status_url.empty() && accepted.is_object() && accepted.contains("statementHandle")) {
        status_url = "/api/v2/statements/" + accepted.value("statementHandle", "");
      }
      if (status_url.empty()) {
        return fail(ErrorKind::kUnknownOutcome,
                    fmt::format("{}: {} was accepted (202) without a handle to follow; it is resent with the same "
                                "requestId",
                                where_, doing));
      }
      auto done = wait_for(status_url, request_id);
      if (!done) return std::unexpected(done.error());
      return parse_result(nlohmann::json::parse(*done, nullptr, false));
    }
    if (!retry_later(response->status) || std::chrono::steady_clock::now() > deadline) {
      return std::unexpected(status_error(response->status, response->body, doing).error());
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 5.0);
  }
}

Result<std::string> SnowflakeClient::wait_for(const std::string& status_url, const std::string& request_id) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(config_.statement_timeout_seconds);
  double pause = 0.05;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(pause * 2, 2.0);
    auto jwt = token();
    if (!jwt) return std::unexpected(jwt.error());
    HttpRequest request;
    request.url = config_.endpoint + status_url;
    request.headers = {"Authorization: Bearer " + *jwt, "X-Snowflake-Authorization-Token-Type: KEYPAIR_JWT",
                       "Accept: application/json", "User-Agent: skipprd/1"};
    request.timeout_seconds = config_.request_timeout_seconds;
    auto response = http_send(request);
    if (!response) continue;  // a status read changes nothing: ask again
    if (response->status == 200) return std::move(response->body);
    if (response->status == 202 || retry_later(response->status)) continue;
    // A handle Snowflake no longer knows says nothing of how its statement ended.
    if (response->status == 404) break;
    return std::unexpected(status_error(response->status, response->body, "a statement").error());
  }
  return fail(ErrorKind::kUnknownOutcome,
              fmt::format("{}: the statement of requestId {} was still running after {} s; it is asked for again "
                          "with the same requestId",
                          where_, request_id, config_.statement_timeout_seconds));
}

Result<SnowflakeResult> SnowflakeClient::query(std::string_view sql) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return execute(sql, 1, snowflake_request_id(fmt::format("{}:{}:{}", sql, now, static_cast<const void*>(this))),
                 false);
}

}  // namespace skippr
