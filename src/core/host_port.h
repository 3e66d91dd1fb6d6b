// "host:port" or "[v6]:port", as every address skipprd listens on or connects to is written (SKIPPR_PEERS,
// SKIPPR_CLUSTER_LISTEN, SKIPPR_METRICS_ADDRESS).
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr {

struct HostPort {
  std::string host;  // without brackets
  int port = 0;
  std::string str() const;  // brackets back around an IPv6 host
};

// kConfig naming `what` (the variable or flag it came from) when malformed or the port is not 1..65535.
Result<HostPort> parse_host_port(std::string_view text, std::string_view what);

}  // namespace skippr
