// Test support for this binary: one moto_server (S3 + DynamoDB) with the fault proxy in front, and the environment
// that points skipprd (in this process or a child) at it through the proxy.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/config_test_util.h"
#include "support/fault_proxy.h"
#include "support/moto_server.h"

namespace skippr::test {

inline FaultProxy& SharedProxy() {
  static FaultProxy proxy(SharedMoto().endpoint());
  return proxy;
}

// WAL_STORAGE=s3 in a fresh bucket, SKIPPR_STATE_STORE=dynamodb in a fresh table, AWS through the proxy.
inline std::map<std::string, std::string> remote_storage_env(double lease_seconds = 30) {
  static int tables = 0;
  std::map<std::string, std::string> env = SharedMoto().env();
  env["AWS_ENDPOINT_URL"] = SharedProxy().endpoint();
  env["WAL_STORAGE"] = "s3";
  env["SKIPPR_WAL_S3_BUCKET"] = SharedMoto().create_bucket("wal");
  env["SKIPPR_WAL_S3_PREFIX"] = "skippr/";
  env["SKIPPR_STATE_STORE"] = "dynamodb";
  env["SKIPPR_STATE_DYNAMODB_TABLE"] = "skippr-state-" + std::to_string(++tables);
  env["SKIPPR_LEASE_SECONDS"] = fmt::format("{}", lease_seconds);
  return env;
}

// Sets `env` in this process for the scope (the in-process AWS clients read it).
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const std::map<std::string, std::string>& env) {
    for (const auto& [name, value] : env) vars_.push_back(std::make_unique<skippr::testing::ScopedEnv>(name, value));
  }

 private:
  std::vector<std::unique_ptr<skippr::testing::ScopedEnv>> vars_;
};

}  // namespace skippr::test
