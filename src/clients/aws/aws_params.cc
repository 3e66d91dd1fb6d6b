#include "clients/aws/aws_params.h"

#include <fmt/format.h>

namespace skippr {

std::vector<ParamSpec> aws_connection_params() {
  return {
      {"region", ParamType::kString, false, nullptr, "default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1"},
      {"endpoint", ParamType::kString, false, nullptr,
       "an S3-compatible server, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)"},
      {"access_key_id", ParamType::kString, false, nullptr, "default: the AWS credential chain; use ${VAR}"},
      {"secret_access_key", ParamType::kString, false, nullptr, "use ${VAR} to keep it out of the file"},
  };
}

Result<AwsOptions> read_aws_options(const nlohmann::json& params, std::string_view where) {
  AwsOptions o;
  o.region = params.value("region", std::string());
  o.endpoint = params.value("endpoint", std::string());
  o.access_key_id = params.value("access_key_id", std::string());
  o.secret_access_key = params.value("secret_access_key", std::string());
  if (o.access_key_id.empty() != o.secret_access_key.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: give both access_key_id and secret_access_key, or neither (then "
                                                "the AWS credential chain is used)",
                                                where));
  }
  return o;
}

}  // namespace skippr
