#include "clients/aws/aws_json.h"

#include <fmt/format.h>

#include <algorithm>

#include "clients/aws/aws_request.h"

namespace skippr {
namespace {

// "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException" -> "ConditionalCheckFailedException".
std::string error_type(const nlohmann::json& body) {
  std::string type = body.is_object() ? body.value("__type", std::string()) : std::string();
  const size_t hash = type.rfind('#');
  return hash == std::string::npos ? type : type.substr(hash + 1);
}

bool is_throttling(const std::string& type) {
  return type == "ProvisionedThroughputExceededException" || type == "ThrottlingException" ||
         type == "RequestLimitExceeded" || type == "LimitExceededException" || type == "TransactionConflictException" ||
         type == "ResourceNumberLimitExceededException";
}

bool is_credentials_problem(const std::string& type) {
  return type == "UnrecognizedClientException" || type == "InvalidSignatureException" ||
         type == "AccessDeniedException" || type == "ExpiredTokenException" || type == "MissingAuthenticationToken";
}

}  // namespace

Result<AwsJsonResponse> aws_json_call(const AwsService& service, const AwsJsonApi& api, std::string_view operation,
                                      const nlohmann::json& request, bool is_read,
                                      std::initializer_list<std::string_view> answers) {
  const std::string body = request.dump();  // r.body is a view of it
  HttpRequest r;
  r.method = "POST";
  r.url = service.endpoint + "/";
  r.body = body;
  r.timeout_seconds = 20;
  r.headers = {fmt::format("Content-Type: {}", api.content_type),
               fmt::format("X-Amz-Target: {}.{}", api.target_prefix, operation)};
  const std::string what = fmt::format("{} {} on {}", api.name, operation, service.endpoint);
  auto response = aws_send(service, api.signing_name, std::move(r));
  if (!response) {
    const ErrorKind kind = is_read ? ErrorKind::kUnavailable : response.error().kind;
    return fail(kind, fmt::format("{}: {}", what, response.error().message));
  }
  auto json = nlohmann::json::parse(response->body, nullptr, false);
  if (response->status == 200 && !json.is_discarded()) return AwsJsonResponse{std::move(json), ""};
  const std::string type = error_type(json);
  if (!type.empty() && std::ranges::find(answers, std::string_view(type)) != answers.end()) {
    return AwsJsonResponse{std::move(json), type};
  }
  // AWS's message for a refused signature can quote the canonical request, session token included: not shown.
  const std::string message = json.is_object() && !is_credentials_problem(type)
                                  ? json.value("message", json.value("Message", std::string()))
                                  : std::string();
  const std::string status =
      fmt::format("HTTP {} {}{}", response->status, type.empty() ? "" : type, message.empty() ? "" : ": " + message);
  if (response->status >= 500 || response->status == 200) {
    // A 5xx after a write reached the service: it may have been applied.
    return fail(is_read ? ErrorKind::kUnavailable : ErrorKind::kUnknownOutcome, fmt::format("{}: {}", what, status));
  }
  if (is_throttling(type)) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}; retried", what, status));
  if (auto expired = aws_expired_after_renewal(service, type, what, status)) return std::unexpected(*expired);
  if (is_credentials_problem(type) || response->status == 403) {
    return fail(ErrorKind::kConfig, fmt::format("{}: {}: the credentials from {} are refused or may not do this; fix "
                                                "them or the resource's policy",
                                                what, status, service.credentials.source));
  }
  return fail(ErrorKind::kConfig, fmt::format("{}: {}", what, status));
}

}  // namespace skippr
