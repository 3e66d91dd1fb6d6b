// GET /metrics on SKIPPR_METRICS_ADDRESS: process_metrics() in Prometheus' text format, served by the event-driven
// server of clients/http while sync (or serve) runs. Anything else is 404.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"

namespace skippr {

namespace http_server {
class Server;
}

class MetricsEndpoint {
 public:
  // Listening once this returns; kConfig for an address that is malformed, taken or not this machine's.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& address);
  ~MetricsEndpoint();

 private:
  explicit MetricsEndpoint(std::unique_ptr<http_server::Server> server);
  std::unique_ptr<http_server::Server> server_;
};

}  // namespace skippr
