#include "clients/aws/aws_request.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "clients/aws/aws_xml.h"
#include "clients/aws/renewing_credentials.h"

namespace skippr {
namespace {

// The URL with its query in canonical form.
std::string with_canonical_query(const std::string& url) {
  const size_t question = url.find('?');
  if (question == std::string::npos) return url;
  const std::string query = aws_canonical_query(std::string_view(url).substr(question + 1));
  return query.empty() ? url.substr(0, question) : url.substr(0, question + 1) + query;
}

Status sign(const AwsService& service, std::string_view signing_name, HttpRequest& request) {
  auto credentials = service.current_credentials();
  if (!credentials) return std::unexpected(credentials.error());
  request.aws_sigv4 = service.sigv4(signing_name);
  request.aws_key_id = credentials->access_key_id;
  request.aws_secret = credentials->secret_access_key;
  if (!credentials->session_token.empty()) {
    request.headers.push_back("x-amz-security-token: " + credentials->session_token);
  }
  return ok();
}

// True when `response` refuses the credentials as expired: S3's ExpiredToken, the JSON APIs' ExpiredTokenException,
// or a HEAD answered 400 without a body (S3 says nothing more on HEAD; only asked for temporary credentials).
bool refused_as_expired(const HttpResponse& response, const std::string& method) {
  if (response.status != 400 && response.status != 403) return false;
  if (aws_xml_text(response.body, "Code") == "ExpiredToken") return true;
  if (auto json = nlohmann::json::parse(response.body, nullptr, false); json.is_object()) {
    if (json.value("__type", std::string()).ends_with("ExpiredTokenException")) return true;
  }
  return method == "HEAD" && response.status == 400 && response.body.empty();
}

}  // namespace

std::string aws_canonical_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string_view name = part.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    pairs.emplace_back(url_encode(url_decode(name)), url_encode(url_decode(value)));
  }
  std::ranges::sort(pairs);
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) out += '&';
    out += name + '=' + value;
  }
  return out;
}

std::optional<Error> aws_expired_after_renewal(const AwsService& service, std::string_view error_code,
                                               std::string_view what, std::string_view status) {
  if (!service.renewing || (error_code != "ExpiredToken" && error_code != "ExpiredTokenException")) return std::nullopt;
  return Error{ErrorKind::kUnavailable,
               fmt::format("{}: {}: the credentials from {} expired again after a renewal; retried", what, status,
                           service.credentials.source)};
}

Result<HttpResponse> aws_send(const AwsService& service, std::string_view signing_name, HttpRequest request) {
  request.url = with_canonical_query(request.url);
  const std::vector<std::string> unsigned_headers = request.headers;
  for (int attempt = 0;; ++attempt) {
    request.headers = unsigned_headers;
    if (auto signed_ok = sign(service, signing_name, request); !signed_ok) return std::unexpected(signed_ok.error());
    auto response = http_send(request);
    if (!response || attempt > 0 || !service.renewing || !refused_as_expired(*response, request.method)) {
      return response;
    }
    service.renewing->expire();
  }
}

}  // namespace skippr
