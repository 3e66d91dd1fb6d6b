// Test support shared by the emulators of Google APIs (BigQuery, GA4): one service account as Google's OAuth token
// endpoint knows it. Its key file (and that of a stranger the endpoint refuses) is written with token_uri pointing
// at the emulator; a JWT-bearer grant is checked as Google does (RS256 against the account's public key; iss, aud,
// scope and expiry), and the Bearer tokens it issued are the only ones API calls may carry. Errors are Google's JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <mutex>
#include <set>
#include <string>

namespace skippr::test {

// {"error": {code, message, status, errors: [{message, domain, reason}]}}, as Google's APIs answer.
nlohmann::json google_api_error(int code, const std::string& status, const std::string& reason,
                                const std::string& message);

class GoogleOAuthAccount {
 public:
  // Key files go into `dir`; `scope` is what a grant must ask for (a prefix of one of its scopes is not enough).
  GoogleOAuthAccount(const std::filesystem::path& dir, const std::string& project, const std::string& client_email,
                     const std::string& token_uri, const std::string& scope);

  const std::filesystem::path& credentials_file() const { return credentials_; }
  const std::filesystem::path& stranger_credentials_file() const { return stranger_credentials_; }

  struct Answer {
    int status = 200;
    nlohmann::json body;
  };
  // The token endpoint's answer to a form-encoded grant: 200 with an access token, or 400 invalid_grant.
  Answer grant(const std::string& form_body);
  // Whether `authorization` ("Bearer <token>") carries a token this account was issued.
  bool authorized(const std::string& authorization);
  // The 401 a call without a valid token gets.
  static nlohmann::json unauthenticated();

 private:
  std::string client_email_, token_uri_, scope_, public_key_, stranger_public_key_;
  std::filesystem::path credentials_, stranger_credentials_;
  std::mutex mutex_;
  std::set<std::string> tokens_;
  int issued_ = 0;
};

}  // namespace skippr::test
