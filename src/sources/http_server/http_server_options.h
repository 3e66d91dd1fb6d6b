// The HttpServer source's parameters: their specs (the names are the contract, PRODUCT.md) and how they are read.
#pragma once

#include <string>
#include <vector>

#include "core/connector.h"

namespace skippr::http_server {

enum class AckMode { kCommitted, kReceived };

struct Options {
  std::string host;
  int port = 0;
  std::string auth_token;
  AckMode ack = AckMode::kCommitted;
  size_t max_body_bytes = 0;
  size_t max_buffer_bytes = 0;
  double commit_timeout_seconds = 0;
  unsigned max_connections = 0;
  unsigned client_timeout_seconds = 0;
};

std::vector<ParamSpec> option_params();

// A bad value, or a non-loopback address without auth_token (unless allow_unauthenticated), is a kConfig error.
Result<Options> read_options(const ConnectorContext& ctx);

}  // namespace skippr::http_server
