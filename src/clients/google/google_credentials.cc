#include "clients/google/google_credentials.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "clients/auth/jwt.h"
#include "clients/http/http_request.h"

namespace skippr {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

Result<GoogleServiceAccount> load_google_service_account(const GcsOptions& options, std::string_view where) {
  std::string path = options.credentials_file;
  std::string source = "credentials_file " + path;
  if (path.empty()) {
    path = env("GOOGLE_APPLICATION_CREDENTIALS");
    source = "GOOGLE_APPLICATION_CREDENTIALS " + path;
  }
  if (path.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: no GCS credentials: set credentials_file to a service-account "
                                                "JSON key, or GOOGLE_APPLICATION_CREDENTIALS",
                                                where));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return fail(ErrorKind::kConfig, fmt::format("{}: cannot read the GCS key file from {}", where, source));
  // A parse error message would quote the file (the key): only its kind is said.
  const auto json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  auto field = [&](const char* name) {
    return json.is_object() && json.contains(name) && json[name].is_string() ? json[name].get<std::string>() : "";
  };
  if (!json.is_object() || field("type") != "service_account") {
    return fail(ErrorKind::kConfig, fmt::format("{}: the GCS key file from {} is not a service-account JSON key "
                                                "(\"type\": \"service_account\"); download one for the account",
                                                where, source));
  }
  GoogleServiceAccount a;
  a.client_email = field("client_email");
  a.private_key = field("private_key");
  a.private_key_id = field("private_key_id");
  a.token_uri = field("token_uri");
  if (a.token_uri.empty()) a.token_uri = "https://oauth2.googleapis.com/token";
  a.source = std::move(source);
  if (a.client_email.empty() || a.private_key.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: the service-account key from {} lacks client_email or "
                                                "private_key",
                                                where, a.source));
  }
  return a;
}

Result<std::string> resolve_gcs_endpoint(const GcsOptions& options, std::string_view where) {
  std::string endpoint = options.endpoint;
  if (endpoint.empty()) endpoint = env("STORAGE_EMULATOR_HOST");
  if (endpoint.empty()) endpoint = "https://storage.googleapis.com";
  // STORAGE_EMULATOR_HOST is often host:port alone, which the SDKs read as plain http.
  if (endpoint.find("://") == std::string::npos) endpoint = "http://" + endpoint;
  while (endpoint.ends_with('/')) endpoint.pop_back();
  if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://")) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: endpoint '{}' must start with http:// or https://", where, endpoint));
  }
  return endpoint;
}

Result<std::string> google_jwt_assertion(const GoogleServiceAccount& account, std::string_view scope, std::time_t now) {
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!account.private_key_id.empty()) header["kid"] = account.private_key_id;
  const nlohmann::json claims = {{"iss", account.client_email},
                                 {"scope", scope},
                                 {"aud", account.token_uri},
                                 {"iat", static_cast<int64_t>(now)},
                                 {"exp", static_cast<int64_t>(now) + 3600}};
  return sign_rs256_jwt(header, claims, account.private_key, "the service-account key from " + account.source);
}

Result<std::string> GoogleTokenSource::token() {
  const std::time_t now = std::time(nullptr);
  if (!token_.empty() && now + 60 < expires_at_) return token_;
  auto assertion = google_jwt_assertion(account_, scope_, now);
  if (!assertion) return std::unexpected(assertion.error());
  const std::string body =
      "grant_type=" + url_encode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + *assertion;
  HttpRequest r;
  r.method = "POST";
  r.url = account_.token_uri;
  r.body = body;
  r.headers = {"Content-Type: application/x-www-form-urlencoded"};
  const std::string what = fmt::format("Google token endpoint {} (for {} from {})", account_.token_uri,
                                       account_.client_email, account_.source);
  auto response = http_send(r);
  // Asking for a token changes nothing: an unknown outcome is as good as no answer.
  if (!response) {
    const ErrorKind kind =
        response.error().kind == ErrorKind::kUnknownOutcome ? ErrorKind::kUnavailable : response.error().kind;
    return fail(kind, fmt::format("{}: {}", what, response.error().message));
  }
  const auto json = nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  auto field = [&](const char* name) {
    return json.is_object() && json.contains(name) && json[name].is_string() ? json[name].get<std::string>() : "";
  };
  if (response->status >= 500 || response->status == 429 || response->status == 408) {
    return fail(ErrorKind::kUnavailable, fmt::format("{}: HTTP {}; retried", what, response->status));
  }
  if (response->status != 200) {
    // Google answers 400 invalid_grant for a key it does not know (deleted, or another account's).
    const std::string code = field("error");
    return fail(ErrorKind::kConfig, fmt::format("{}: HTTP {}{}: the service-account key is refused; fix the key "
                                                "file or the account",
                                                what, response->status, code.empty() ? "" : " " + code));
  }
  token_ = field("access_token");
  if (token_.empty()) return fail(ErrorKind::kUnavailable, what + ": the answer holds no access_token");
  const int64_t expires_in =
      json.contains("expires_in") && json["expires_in"].is_number_integer() ? json["expires_in"].get<int64_t>() : 3600;
  expires_at_ = now + static_cast<std::time_t>(expires_in);
  return token_;
}

}  // namespace skippr
