// AWS's JSON protocol, as DynamoDB (1.0) and Glue (1.1) speak it: POST / with an X-Amz-Target header, signed with
// SigV4 (libcurl's), errors named by "__type". One call and one reading of its failures for every such client.
#pragma once

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

#include "clients/aws/aws_config.h"
#include "core/result.h"

namespace skippr {

struct AwsJsonApi {
  const char* name;           // "DynamoDB", "Glue": for messages
  const char* signing_name;   // "dynamodb", "glue"
  const char* target_prefix;  // "DynamoDB_20120810", "AWSGlue"
  const char* content_type;   // "application/x-amz-json-1.0"
};

struct AwsJsonResponse {
  nlohmann::json body;
  std::string error_type;  // set when the service answered with one of the call's `answers`
};

// One call with its request JSON. An error whose type is one of `answers` (a failed condition, an entity not
// found) is an answer, returned with error_type set. Other failures: kConfig for what waiting cannot fix
// (credentials, a malformed request), kUnavailable when nothing happened (no connection, throttling), and for a
// write (`is_read` false) kUnknownOutcome when it may have happened (a timeout after sending, a 5xx).
Result<AwsJsonResponse> aws_json_call(const AwsService& service, const AwsJsonApi& api, std::string_view operation,
                                      const nlohmann::json& request, bool is_read,
                                      std::initializer_list<std::string_view> answers = {});

}  // namespace skippr
