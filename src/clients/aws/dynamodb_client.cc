#include "clients/aws/dynamodb_client.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <regex>
#include <thread>

#include "clients/aws/aws_json.h"

namespace skippr {
namespace {

constexpr std::string_view kConditionFailed = "ConditionalCheckFailedException";

constexpr AwsJsonApi kDynamoDb = {"DynamoDB", "dynamodb", "DynamoDB_20120810", "application/x-amz-json-1.0"};

bool is_read(std::string_view operation) { return operation == "GetItem" || operation == "DescribeTable"; }

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
  auto response = aws_json_call(service_, kDynamoDb, operation, request, is_read(operation));
  if (!response) return std::unexpected(response.error());
  return std::move(response->body);
}

Result<ConditionalWrite> DynamoDbClient::conditional(std::string_view operation, const nlohmann::json& request) {
  auto response = aws_json_call(service_, kDynamoDb, operation, request, is_read(operation), {kConditionFailed});
  if (!response) return std::unexpected(response.error());
  return response->error_type.empty() ? ConditionalWrite::kApplied : ConditionalWrite::kConditionFailed;
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
