// Snowflake's SQL API v2 (POST /api/v2/statements, GET /api/v2/statements/{handle}) with key-pair authentication: a
// JWT signed with the user's RSA key (clients/auth/jwt.h), renewed before its hour is up. Every request carries the
// caller's requestId, the API's own idempotency key: a request resent with retry=true and a requestId Snowflake has
// run is answered with that run's result instead of running again. Statements the API answers with 202 (still
// running after 45 s) are polled by their handle.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

struct SnowflakeConfig {
  std::string account;  // the account identifier (orgname-account, or the locator with its region)
  std::string user;
  std::string private_key_pem;
  std::string key_source;  // where the key came from, for messages ("private_key_file /path")
  std::string role, warehouse, database, schema;
  std::string endpoint;  // empty: https://<account>.snowflakecomputing.com
  std::string where;     // "sink 'x'"
  double request_timeout_seconds = 60;
  double statement_timeout_seconds = 900;  // a statement still running after this is an unknown outcome
};

struct SnowflakeResult {
  std::vector<std::vector<std::optional<std::string>>> rows;  // as the API returns them: text, or null
  std::string handle;
};

class SnowflakeClient {
 public:
  // kConfig when the key cannot be read.
  static Result<SnowflakeClient> make(SnowflakeConfig config);

  // Runs `sql` (`statement_count` statements separated by ';' when above 1) as one request under `request_id`.
  // `retry`: an earlier request with this id may have been acted on. Failures are typed: kConfig (refused login,
  // missing warehouse or database, a compilation error), kUnavailable (not accepted: throttled, no connection),
  // kUnknownOutcome (sent, no answer: resend with the same id and retry).
  Result<SnowflakeResult> execute(std::string_view sql, int statement_count, const std::string& request_id, bool retry);
  // A single read-only statement under a new request id.
  Result<SnowflakeResult> query(std::string_view sql);
  const std::string& where() const { return where_; }

 private:
  explicit SnowflakeClient(SnowflakeConfig config) : config_(std::move(config)) {}
  Result<std::string> token();
  Result<std::string> wait_for(const std::string& status_url, const std::string& request_id);
  Status status_error(long status, const std::string& body, std::string_view doing);

  SnowflakeConfig config_;
  std::string where_;
  std::string fingerprint_;
  std::string token_;
  std::time_t token_expires_ = 0;
};

// A string literal in Snowflake's syntax: single quotes, with backslash and quote escaped.
std::string sf_quote_literal(std::string_view text);
// A quoted identifier, case kept as written ("trips" stays lower-case; query it as "trips").
std::string sf_quote_identifier(std::string_view name);
// A version-4-shaped UUID derived from `key` (SHA-256): the same key gives the same requestId in every process.
std::string snowflake_request_id(std::string_view key);
// Snowflake's account identifier as JWT claims spell it: upper-case, cut at the first '.' (a locator's region
// ".us-east-1", ".privatelink").
std::string snowflake_jwt_account(std::string_view account);

}  // namespace skippr
