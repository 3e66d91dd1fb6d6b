#include "clients/aws/dynamodb_client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <chrono>
#include <map>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

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

namespace {

// What is wrong with a described table's keys for items keyed by one string partition key `key_name`, as "the
// partition key 'pk' (S)"-like words, or nullopt when they are right.
std::optional<std::string> key_schema_mismatch(const nlohmann::json& table, const std::string& key_name) {
  std::map<std::string, std::string> types;
  for (const auto& a : table.value("AttributeDefinitions", nlohmann::json::array())) {
    types[a.value("AttributeName", "")] = a.value("AttributeType", "");
  }
  std::vector<std::string> keys;
  bool right = true;
  const auto schema = table.value("KeySchema", nlohmann::json::array());
  for (const auto& k : schema) {
    const std::string name = k.value("AttributeName", ""), kind = k.value("KeyType", "");
    keys.push_back(fmt::format("{} key '{}' ({})", kind == "HASH" ? "partition" : "sort", name, types[name]));
    right = right && kind == "HASH" && name == key_name && types[name] == "S";
  }
  if (right && schema.size() == 1) return std::nullopt;
  return keys.empty() ? std::string("no key schema") : fmt::format("the {}", fmt::join(keys, " and the "));
}

}  // namespace

Status DynamoDbClient::ensure_table(const std::string& table, const std::string& key_name) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto described = call("DescribeTable", {{"TableName", table}});
    if (described) {
      const auto& found = (*described)["Table"];
      if (auto wrong = key_schema_mismatch(found, key_name)) {
        return fail(ErrorKind::kConfig,
                    fmt::format("the table exists with {}, but skipprd keeps its items under one string partition "
                                "key named '{}' and no sort key; name another table (it is created for you), or "
                                "create this one with that key",
                                *wrong, key_name));
      }
      const std::string status = found.value("TableStatus", std::string());
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
