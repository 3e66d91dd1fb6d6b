// The HTTP side of `skipprd serve`: the status page at /, its data at /api/status, the metrics at /metrics, and
// POST /api/pipelines/<name>/(enable|disable|reset), which needs `Authorization: Bearer <SKIPPR_SERVE_TOKEN>` (without
// a token configured, actions are off: 403).
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "serve/supervisor.h"

namespace skippr {

namespace http_server {
class Server;
}

class ServeEndpoint {
 public:
  // Listening once this returns; kConfig for an address that is malformed or not this machine's,
  // kUnavailable for a port another process holds.
  static Result<std::unique_ptr<ServeEndpoint>> start(const std::string& address, Supervisor& supervisor,
                                                      std::string token);
  ~ServeEndpoint();

  struct Shared;  // what the server's handler and the action threads share

 private:
  ServeEndpoint(std::unique_ptr<http_server::Server> server, std::shared_ptr<Shared> shared);
  std::unique_ptr<http_server::Server> server_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace skippr
