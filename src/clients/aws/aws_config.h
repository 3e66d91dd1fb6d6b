// Where an AWS service is and who calls it, resolved the way the AWS SDKs and CLI do, so a machine that runs `aws`
// runs skipprd: explicit parameters first, then the environment, web identity (a token file and a role, exchanged at
// STS), the shared credentials file, then the container and instance metadata endpoints. Endpoints:
// AWS_ENDPOINT_URL_<SERVICE>, then AWS_ENDPOINT_URL, then AWS's own.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials only
  std::string source;         // where they came from ("environment", "profile default", ...): for messages
  // When temporary credentials stop working; the epoch (the default) for keys that do not expire.
  std::chrono::system_clock::time_point expiration = {};
};

class RenewingCredentials;

struct AwsOptions {
  std::string region;             // empty: AWS_REGION, AWS_DEFAULT_REGION, then us-east-1
  std::string endpoint;           // empty: the environment's, else AWS's own
  std::string access_key_id;      // both or neither: else the credential chain
  std::string secret_access_key;  // never in a message
};

struct AwsService {
  std::string region;
  std::string endpoint;          // scheme://host[:port], no trailing slash
  bool custom_endpoint = false;  // set: path-style addressing (bucket in the path), as S3-compatible servers want
  AwsCredentials credentials;    // as first resolved: its source names them in messages
  // Set for credentials that expire (web identity, container, instance metadata): they are renewed from there.
  std::shared_ptr<RenewingCredentials> renewing = {};

  // The credentials to sign a request with now (renewed first if they are about to expire).
  Result<AwsCredentials> current_credentials() const;
  // "aws:amz:<region>:<service>" for libcurl's SigV4.
  std::string sigv4(std::string_view service) const;
};

// kConfig naming `where` when no credentials can be found anywhere (saying where it looked).
Result<AwsService> resolve_aws_service(const AwsOptions& options, std::string_view service, std::string_view where);

}  // namespace skippr
