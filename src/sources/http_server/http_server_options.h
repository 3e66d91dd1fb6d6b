// The HttpServer source's parameters: their specs (the names are the contract, PRODUCT.md) and how they are read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
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
  // The streams accepted at POST /ingest/<stream>: names, or "*" for any plain name. Empty: POST /ingest, one stream.
  std::vector<std::string> streams;
};

// The stream a request path names: "" for /ingest without `streams`, the name for /ingest/<name> when `streams`
// accepts it, nullopt when the path is not an ingest path of this source.
std::optional<std::string> stream_of_path(const Options& options, std::string_view path);

std::vector<ParamSpec> option_params();

// A bad value, or a non-loopback address without auth_token (unless allow_unauthenticated), is a kConfig error.
Result<Options> read_options(const ConnectorContext& ctx);

}  // namespace skippr::http_server
