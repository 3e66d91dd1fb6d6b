// The DynamoDB calls skipprd makes (the JSON API over clients/http with SigV4): strongly consistent reads and
// conditional writes, which are all a state store and a lease need, and the table check at start-up.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "clients/aws/aws_config.h"
#include "core/result.h"

namespace skippr {

// A conditional write either happened or its ConditionExpression was false (nothing changed).
enum class ConditionalWrite { kApplied, kConditionFailed };

class DynamoDbClient {
 public:
  explicit DynamoDbClient(AwsService service) : service_(std::move(service)) {}

  // One call ("GetItem", "UpdateItem", ...) with its request JSON; the response JSON. Errors as aws_json_call says
  // (clients/aws/aws_json.h); a failed condition is one too: use the typed calls below for conditional writes.
  Result<nlohmann::json> call(std::string_view operation, const nlohmann::json& request);

  // The item under `key`, read strongly consistent; nullopt when there is none.
  Result<std::optional<nlohmann::json>> get_item(const std::string& table, const nlohmann::json& key);
  // UpdateItem with `update` (an UpdateExpression), `condition` (empty: none) and their values (":v" ->
  // AttributeValue).
  Result<ConditionalWrite> update_item(const std::string& table, const nlohmann::json& key, const std::string& update,
                                       const std::string& condition, const nlohmann::json& values);
  Result<ConditionalWrite> delete_item(const std::string& table, const nlohmann::json& key);
  // Creates the table (one string partition key `key_name`, on-demand capacity) when it does not exist, and waits
  // until it is ACTIVE.
  Status ensure_table(const std::string& table, const std::string& key_name);

  const AwsService& service() const { return service_; }

 private:
  Result<ConditionalWrite> conditional(std::string_view operation, const nlohmann::json& request);
  AwsService service_;
};

// AttributeValue helpers: {"S": text}, {"N": "123"}, {"BOOL": b}, and their readers (a default when absent).
nlohmann::json dynamo_string(std::string_view text);
nlohmann::json dynamo_number(uint64_t n);
nlohmann::json dynamo_bool(bool b);
std::string dynamo_get_string(const nlohmann::json& item, const char* name, std::string fallback = "");
uint64_t dynamo_get_number(const nlohmann::json& item, const char* name, uint64_t fallback = 0);
bool dynamo_get_bool(const nlohmann::json& item, const char* name, bool fallback);

}  // namespace skippr
