#include "clients/clickhouse/clickhouse_client.h"

#include <fmt/format.h>

#include <openssl/evp.h>

#include <charconv>

#include "clients/http/http_request.h"
#include "core/redact.h"

namespace skippr {
namespace {

// Server error codes a retry cannot change: the user's configuration or the table is at fault.
bool is_config_code(int code) {
  switch (code) {
    case 16:   // NO_SUCH_COLUMN_IN_TABLE
    case 36:   // BAD_ARGUMENTS
    case 44:   // ILLEGAL_COLUMN
    case 47:   // UNKNOWN_IDENTIFIER
    case 50:   // UNKNOWN_TYPE
    case 53:   // TYPE_MISMATCH
    case 60:   // UNKNOWN_TABLE
    case 62:   // SYNTAX_ERROR
    case 81:   // UNKNOWN_DATABASE
    case 115:  // UNKNOWN_SETTING
    case 164:  // READONLY
    case 192:  // UNKNOWN_USER
    case 193:  // WRONG_PASSWORD
    case 194:  // REQUIRED_PASSWORD
    case 195:  // IP_ADDRESS_NOT_ALLOWED
    case 291:  // DATABASE_ACCESS_DENIED
    case 497:  // ACCESS_DENIED
    case 516:  // AUTHENTICATION_FAILED
      return true;
    default:
      return false;
  }
}

// "Code: 193, e.displayText() = DB::Exception: Wrong password for user default, e.what() = DB::Exception" (18.x) or
// "Code: 193. DB::Exception: Wrong password ... (WRONG_PASSWORD) (version 23.x)": the code and the sentence.
std::pair<int, std::string> server_error(std::string_view body) {
  int code = 0;
  if (body.starts_with("Code: ")) {
    const char* start = body.data() + 6;
    std::from_chars(start, body.data() + body.size(), code);
  }
  std::string_view text = body;
  if (const size_t at = text.find("DB::Exception: "); at != std::string_view::npos) text = text.substr(at + 15);
  if (const size_t at = text.find(", e.what()"); at != std::string_view::npos) text = text.substr(0, at);
  if (const size_t at = text.find(" (version "); at != std::string_view::npos) text = text.substr(0, at);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.')) text.remove_suffix(1);
  if (text.size() > 500) text = text.substr(0, 500);
  return {code, std::string(text)};
}

std::string basic_auth(const std::string& user, const std::string& password) {
  const std::string pair = user + ":" + password;
  std::string out(4 * ((pair.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(pair.data()), static_cast<int>(pair.size()));
  out.resize(static_cast<size_t>(n));
  return "Authorization: Basic " + out;
}

}  // namespace

Result<std::string> ClickHouseClient::query(std::string_view sql, const ClickHouseSettings& settings) const {
  std::string url_query;
  for (const auto& [name, value] : settings) url_query += fmt::format("&{}={}", name, url_encode(value));
  return send(url_query, sql, /*is_insert=*/false);
}

Status ClickHouseClient::insert(std::string_view insert_sql, std::string_view data,
                                const ClickHouseSettings& settings) const {
  std::string url_query = fmt::format("&wait_end_of_query=1&query={}", url_encode(insert_sql));
  for (const auto& [name, value] : settings) url_query += fmt::format("&{}={}", name, url_encode(value));
  auto answer = send(url_query, data, /*is_insert=*/true);
  if (!answer) return std::unexpected(answer.error());
  return ok();
}

Result<std::string> ClickHouseClient::send(std::string_view url_query, std::string_view body, bool is_insert) const {
  HttpRequest request;
  request.method = "POST";
  std::string base = config_.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  // Parameters come as "&name=value" pieces; the first one's '&' becomes the '?'.
  request.url = url_query.empty() ? base + "/" : fmt::format("{}/?{}", base, url_query.substr(1));
  request.headers.push_back(basic_auth(config_.user, config_.password));
  request.headers.push_back("Content-Type: application/octet-stream");
  request.body = body;
  request.timeout_seconds = config_.timeout_seconds;
  if (is_insert) allow_long_transfer(request);
  auto response = http_send(request);
  if (!response) {
    Error e = response.error();
    e.message = redact(fmt::format("{}: ClickHouse at {}: {}", config_.where, display_url(config_.url), e.message),
                       {config_.password});
    return std::unexpected(e);
  }
  if (response->status == 200) return std::move(response->body);
  auto [code, text] = server_error(response->body);
  text = redact(text, {config_.password});
  ErrorKind kind = is_config_code(code) || response->status == 401 || response->status == 403 ? ErrorKind::kConfig
                   : is_insert ? ErrorKind::kUnknownOutcome
                               : ErrorKind::kUnavailable;
  std::string advice;
  if (code == 192 || code == 193 || code == 194 || code == 516 || response->status == 401) {
    advice = "; check the sink's user and password";
  } else if (code == 81) {
    advice = "; create the database or correct the sink's database";
  }
  return fail(kind, fmt::format("{}: ClickHouse answered HTTP {} (code {}): {}{}", config_.where, response->status,
                                code, text, advice));
}

std::string ch_quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string ch_quote_identifier(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '\\' || c == '`') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('`');
  return out;
}

}  // namespace skippr
