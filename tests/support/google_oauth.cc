#include "support/google_oauth.h"

#include <fmt/format.h>
#include <httplib.h>

#include <ctime>

#include "support/emulator_common.h"
#include "support/process.h"
#include "support/test_keys.h"

namespace skippr::test {
namespace {

std::string form_value(const std::string& body, const std::string& name) {
  httplib::Params params;
  httplib::detail::parse_query_text(body, params);
  auto it = params.find(name);
  return it == params.end() ? "" : it->second;
}

std::filesystem::path write_key(const std::filesystem::path& dir, const std::string& name, const std::string& project,
                                const std::string& client_email, const std::string& token_uri,
                                std::string& public_key) {
  const std::string pem = make_rsa_key(dir, name);
  public_key = read_text(dir / (name + ".pub"));
  const nlohmann::json sa = {
      {"type", "service_account"}, {"project_id", project},        {"private_key_id", "0123456789abcdef"},
      {"private_key", pem},        {"client_email", client_email}, {"client_id", "1"},
      {"token_uri", token_uri}};
  const auto file = dir / (name + ".json");
  write_text(file, sa.dump());
  return file;
}

}  // namespace

nlohmann::json google_api_error(int code, const std::string& status, const std::string& reason,
                                const std::string& message) {
  return {{"error",
           {{"code", code},
            {"message", message},
            {"status", status},
            {"errors", {{{"message", message}, {"domain", "global"}, {"reason", reason}}}}}}};
}

GoogleOAuthAccount::GoogleOAuthAccount(const std::filesystem::path& dir, const std::string& project,
                                       const std::string& client_email, const std::string& token_uri,
                                       const std::string& scope)
    : client_email_(client_email), token_uri_(token_uri), scope_(scope) {
  credentials_ = write_key(dir, "loader", project, client_email, token_uri, public_key_);
  stranger_credentials_ = write_key(dir, "stranger", project, client_email, token_uri, stranger_public_key_);
}

GoogleOAuthAccount::Answer GoogleOAuthAccount::grant(const std::string& form_body) {
  const auto claims = form_value(form_body, "grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer"
                          ? verified_rs256_claims(form_value(form_body, "assertion"), public_key_)
                          : std::nullopt;
  bool scoped = false;
  if (claims) {
    const std::string scopes = claims->value("scope", "");
    for (size_t at = 0; at <= scopes.size();) {
      const size_t space = std::min(scopes.find(' ', at), scopes.size());
      scoped = scoped || scopes.substr(at, space - at) == scope_;
      at = space + 1;
    }
  }
  const int64_t now = std::time(nullptr);
  if (!claims || !scoped || claims->value("iss", "") != client_email_ || claims->value("aud", "") != token_uri_ ||
      claims->value("exp", int64_t{0}) < now) {
    return {400, {{"error", "invalid_grant"}, {"error_description", "Invalid JWT Signature."}}};
  }
  std::lock_guard lock(mutex_);
  const std::string token = fmt::format("ya29.emulated-{}", ++issued_);
  tokens_.insert(token);
  return {200, {{"access_token", token}, {"expires_in", 3599}, {"token_type", "Bearer"}}};
}

bool GoogleOAuthAccount::authorized(const std::string& authorization) {
  std::lock_guard lock(mutex_);
  return authorization.starts_with("Bearer ") && tokens_.count(authorization.substr(7)) > 0;
}

nlohmann::json GoogleOAuthAccount::unauthenticated() {
  return google_api_error(401, "UNAUTHENTICATED", "unauthorized",
                          "Request is missing required authentication credential. Expected OAuth 2 access token.");
}

}  // namespace skippr::test
