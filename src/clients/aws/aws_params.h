// The connection parameters every connector on an AWS service shares (region, endpoint, an explicit key pair), one
// declaration and one reading of them, so the S3 sink, the File source on s3:// and what follows agree.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

#include "clients/aws/aws_config.h"
#include "core/connector.h"
#include "core/result.h"

namespace skippr {

std::vector<ParamSpec> aws_connection_params();
// kConfig naming `where` when only one of access_key_id / secret_access_key is given.
Result<AwsOptions> read_aws_options(const nlohmann::json& params, std::string_view where);

}  // namespace skippr
