// Who calls Google's APIs (Cloud Storage, BigQuery) and where: a service-account JSON key (the file the console
// downloads) signs a JWT (RS256, OpenSSL) that the account's token_uri exchanges for an OAuth access token, cached
// until a minute before it expires. Nothing here ever puts the private key, the signed assertion or a token into a
// message.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr {

struct GcsOptions {
  // A service-account JSON key file; empty: GOOGLE_APPLICATION_CREDENTIALS.
  std::string credentials_file;
  // The JSON API's origin, e.g. http://127.0.0.1:4443; empty: STORAGE_EMULATOR_HOST (as Google's SDKs honour it),
  // else https://storage.googleapis.com.
  std::string endpoint;
};

struct GoogleServiceAccount {
  std::string client_email;
  std::string private_key;  // PEM
  std::string private_key_id;
  std::string token_uri;
  std::string source;  // where it came from ("credentials_file /path", "GOOGLE_APPLICATION_CREDENTIALS /path")
};

// kConfig naming `where` for no credentials, a file that cannot be read, or one that is not a service-account key
// (its content is never quoted).
Result<GoogleServiceAccount> load_google_service_account(const GcsOptions& options, std::string_view where);

// The endpoint the options resolve to, without a trailing '/'; kConfig for one that is not http(s).
Result<std::string> resolve_gcs_endpoint(const GcsOptions& options, std::string_view where);

// The signed JWT assertion for `account` issued at `now` (exposed for tests); kConfig when the key cannot be read.
Result<std::string> google_jwt_assertion(const GoogleServiceAccount& account, std::string_view scope, std::time_t now);

inline constexpr const char* kGcsScope = "https://www.googleapis.com/auth/devstorage.read_write";
inline constexpr const char* kBigQueryScope = "https://www.googleapis.com/auth/bigquery";
inline constexpr const char* kAnalyticsReadonlyScope = "https://www.googleapis.com/auth/analytics.readonly";

// Access tokens for one service account, fetched from its token_uri when none is cached or the cached one expires
// within a minute. Not thread-safe (one per client).
class GoogleTokenSource {
 public:
  // `scope`: what the token may do (kGcsScope, kBigQueryScope).
  GoogleTokenSource(GoogleServiceAccount account, std::string scope)
      : account_(std::move(account)), scope_(std::move(scope)) {}

  // kConfig when the token endpoint refuses the account (a wrong or revoked key), kUnavailable when it cannot be
  // reached or answers 5xx.
  Result<std::string> token();
  // Forgets the cached token (the service said it is no longer valid).
  void invalidate() { token_.clear(); }
  const GoogleServiceAccount& account() const { return account_; }

 private:
  GoogleServiceAccount account_;
  std::string scope_;
  std::string token_;
  std::time_t expires_at_ = 0;
};

}  // namespace skippr
