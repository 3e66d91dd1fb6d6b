#include "serve/metrics_endpoint.h"

#include <fmt/format.h>

#include "clients/http/mhd_server.h"
#include "core/host_port.h"
#include "serve/metrics.h"

namespace skippr {

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<http_server::Server> server) : server_(std::move(server)) {}

MetricsEndpoint::~MetricsEndpoint() {
  if (server_) server_->stop();
}

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& address) {
  // ":9464", as Prometheus' exporters write it: every interface.
  auto where = parse_host_port(address.starts_with(':') ? "0.0.0.0" + address : address, "SKIPPR_METRICS_ADDRESS");
  if (!where) return std::unexpected(where.error());
  // Scrapes are small GETs from a few collectors: a handful of connections, short timeouts.
  const http_server::Limits limits{.max_body_bytes = 4096, .max_connections = 16, .client_timeout_seconds = 10};
  auto server = std::make_unique<http_server::Server>(
      "metrics", limits, [](const http_server::Request&) { return std::optional<http_server::Reply>(); },
      [](const http_server::Request& request, http_server::Pending*) -> std::optional<http_server::Reply> {
        if (request.method != "GET" && request.method != "HEAD") {
          return http_server::error_reply(405, "only GET /metrics is served here");
        }
        if (request.path != "/metrics") return http_server::error_reply(404, "only /metrics is served here");
        http_server::Reply reply;
        reply.body = process_metrics().render();
        reply.content_type = "text/plain; version=0.0.4; charset=utf-8";
        return reply;
      });
  if (auto st = server->listen(where->host, where->port); !st) {
    return fail(st.error().kind, fmt::format("SKIPPR_METRICS_ADDRESS={}: {}", address, st.error().message));
  }
  SKIPPR_TRY(server->start());
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(server)));
}

}  // namespace skippr
