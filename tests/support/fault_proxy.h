// Test support: fault_proxy.py between skipprd and an upstream (moto_server), to make chosen requests fail in chosen
// ways: lost after the upstream acted (an unknown outcome), lost before, answered with an AWS error, or slow.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "support/process.h"

namespace skippr::test {

// A rule as fault_proxy.py reads it (see its docstring); empty strings match anything.
struct FaultRule {
  std::string method = {}, path_regex = {}, target_regex = {}, body_regex = {};
  std::string action = {};  // "drop_after_forward", "drop_before_forward", "status", "status_after_forward", "delay"
  int status = 500;
  std::string code = "InternalError";
  std::string body = {};  // set: the answer's body as is (JSON), instead of an AWS error made from `code`
  double delay_seconds = 0;
  int skip = 0;   // matching requests let through before the faults start
  int times = 1;  // faults applied, -1 = every matching request
};

class FaultProxy {
 public:
  // `upstream`: e.g. MotoServer::endpoint(). Point the client at endpoint() instead.
  explicit FaultProxy(std::string upstream);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::string endpoint() const;    // http://127.0.0.1:<port>
  int add(const FaultRule& rule);  // the rule's id
  void clear();                    // every rule removed, counters zeroed
  int hits(int rule_id) const;     // faults the rule applied
  uint64_t requests() const;       // requests seen since the start or clear(), faulted or not

 private:
  nlohmann::json control(const std::string& method, const std::string& body = "") const;

  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
};

}  // namespace skippr::test
