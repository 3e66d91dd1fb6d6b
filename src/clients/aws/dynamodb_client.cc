#include "clients/aws/dynamodb_client.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <regex>
#include <thread>

#include "clients/http/http_request.h"

namespace skippr {
namespace {

constexpr std::string_view kConditionFailed = "ConditionalCheckFailedException";

// "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException" -> "ConditionalCheckFailedException".
std::string error_type(const nlohmann::json& body) {
  std::string type = body.is_object() ? body.value("__type", std::string()) : std::string();
  const size_t hash = type.rfind('#');
  return hash == std::string::npos ? type : type.substr(hash + 1);
}

bool is_throttling(const std::string& type) {
  return type == "ProvisionedThroughputExceededException" || type == "ThrottlingException" ||
         type == "RequestLimitExceeded" || type == "LimitExceededException" || type == "TransactionConflictException";
}

bool is_credentials_problem(const std::string& type) {
  return type == "UnrecognizedClientException" || type == "InvalidSignatureException" ||
         type == "AccessDeniedException" || type == "ExpiredTokenException" || type == "MissingAuthenticationToken";
}

}  // namespace

nlohmann::json dynamo_string(std::string_view text) { return {{"S", std::string(text)}}; }
nlohmann::json dynamo_number(uint64_t n) { return {{"N", std::to_string(n)}}; }
nlohmann::json dynamo_bool(bool b) { return {{"BOOL", b}}; }

std::string dynamo_get_string(const nlohmann::json& item, const char* name, std::string fallback) {
  if (!item.contains(name) || !item[name].contains("S")) return fallback;
  return item[name]["S"].get<std::string>();
}

uint64_t dynamo_get_number(const nlohmann::json& item, const char* name, uint64_t fallback) {
  if (!item.contains(name) || !item[name].contains("N")) return fallback;
  const std::string text = item[name]["N"].get<std::string>();
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && end == text.data() + text.size() ? n : fallback;
}

bool dynamo_get_bool(const nlohmann::json& item, const char* name, bool fallback) {
  if (!item.contains(name) || !item[name].contains("BOOL")) return fallback;
  return item[name]["BOOL"].get<bool>();
}

Result<nlohmann::json> DynamoDbClient::call(std::string_view operation, const nlohmann::json& request) {
  const std::string body = request.dump();
  HttpRequest r;
  r.method = "POST";
  r.url = service_.endpoint + "/";
  r.body = body;
  r.timeout_seconds = 20;
  r.aws_sigv4 = service_.sigv4("dynamodb");
  r.aws_key_id = service_.credentials.access_key_id;
  r.aws_secret = service_.credentials.secret_access_key;
  r.headers = {"Content-Type: application/x-amz-json-1.0",
               fmt::format("X-Amz-Target: DynamoDB_20120810.{}", operation)};
  if (!service_.credentials.session_token.empty()) {
    r.headers.push_back("x-amz-security-token: " + service_.credentials.session_token);
  }
  const std::string what = fmt::format("DynamoDB {} on {}", operation, service_.endpoint);
  const bool is_read = operation == "GetItem" || operation == "DescribeTable";
  auto response = http_send(r);
  if (!response) {
    const ErrorKind kind = is_read ? ErrorKind::kUnavailable : response.error().kind;
    return fail(kind, fmt::format("{}: {}", what, response.error().message));
  }
  auto json = nlohmann::json::parse(response->body, nullptr, false);
  if (response->status == 200 && !json.is_discarded()) return json;
  const std::string type = error_type(json);
  // AWS's message for a refused signature can quote the canonical request, session token included: not shown.
  const std::string message = json.is_object() && !is_credentials_problem(type)
                                  ? json.value("message", json.value("Message", std::string()))
                                  : std::string();
  const std::string status =
      fmt::format("HTTP {} {}{}", response->status, type.empty() ? "" : type, message.empty() ? "" : ": " + message);
  if (type == kConditionFailed) return fail(ErrorKind::kUnavailable, std::string(kConditionFailed));
  if (response->status >= 500 || response->status == 200) {
    // A 5xx after a write reached the service: it may have been applied.
    return fail(is_read ? ErrorKind::kUnavailable : ErrorKind::kUnknownOutcome, fmt::format("{}: {}", what, status));
  }
  if (is_throttling(type)) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}; retried", what, status));
  if (is_credentials_problem(type) || response->status == 403) {
    return fail(ErrorKind::kConfig, fmt::format("{}: {}: the credentials from {} are refused or may not do this; fix "
                                                "them or the table's policy",
                                                what, status, service_.credentials.source));
  }
  return fail(ErrorKind::kConfig, fmt::format("{}: {}", what, status));
}

Result<ConditionalWrite> DynamoDbClient::conditional(std::string_view operation, const nlohmann::json& request) {
  auto response = call(operation, request);
  if (response) return ConditionalWrite::kApplied;
  if (response.error().message == kConditionFailed) return ConditionalWrite::kConditionFailed;
  return std::unexpected(response.error());
}

Result<std::optional<nlohmann::json>> DynamoDbClient::get_item(const std::string& table, const nlohmann::json& key) {
  auto response = call("GetItem", {{"TableName", table}, {"Key", key}, {"ConsistentRead", true}});
  if (!response) return std::unexpected(response.error());
  if (!response->contains("Item")) return std::optional<nlohmann::json>();
  return std::optional<nlohmann::json>((*response)["Item"]);
}

Result<ConditionalWrite> DynamoDbClient::update_item(const std::string& table, const nlohmann::json& key,
                                                     const std::string& update, const std::string& condition,
                                                     const nlohmann::json& values) {
  nlohmann::json request = {{"TableName", table}, {"Key", key}, {"UpdateExpression", update}};
  if (!condition.empty()) request["ConditionExpression"] = condition;
  if (!values.empty()) request["ExpressionAttributeValues"] = values;
  // Every attribute is written "#name" in the expressions, so none can clash with DynamoDB's reserved words.
  nlohmann::json names = nlohmann::json::object();
  static const std::regex name_token("#([A-Za-z_][A-Za-z0-9_]*)");
  const std::string both = update + " " + condition;
  for (auto it = std::sregex_iterator(both.begin(), both.end(), name_token); it != std::sregex_iterator(); ++it) {
    names[(*it)[0].str()] = (*it)[1].str();
  }
  if (!names.empty()) request["ExpressionAttributeNames"] = names;
  return conditional("UpdateItem", request);
}

Result<ConditionalWrite> DynamoDbClient::delete_item(const std::string& table, const nlohmann::json& key) {
  return conditional("DeleteItem", {{"TableName", table}, {"Key", key}});
}

Status DynamoDbClient::ensure_table(const std::string& table, const std::string& key_name) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto described = call("DescribeTable", {{"TableName", table}});
    if (described) {
      const std::string status = (*described)["Table"].value("TableStatus", std::string());
      if (status == "ACTIVE") return ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // CREATING or UPDATING
      continue;
    }
    if (described.error().message.find("ResourceNotFoundException") == std::string::npos) {
      return std::unexpected(described.error());
    }
    auto created =
        call("CreateTable", {{"TableName", table},
                             {"AttributeDefinitions", {{{"AttributeName", key_name}, {"AttributeType", "S"}}}},
                             {"KeySchema", {{{"AttributeName", key_name}, {"KeyType", "HASH"}}}},
                             {"BillingMode", "PAY_PER_REQUEST"}});
    if (!created && created.error().message.find("ResourceInUseException") == std::string::npos) {
      return std::unexpected(created.error());
    }
  }
  return fail(ErrorKind::kUnavailable, fmt::format("DynamoDB table {} did not become ACTIVE", table));
}

}  // namespace skippr
