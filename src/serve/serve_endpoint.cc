#include "serve/serve_endpoint.h"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "clients/http/mhd_server.h"
#include "core/host_port.h"
#include "serve/metrics.h"
#include "serve/status_page.h"

namespace skippr {
namespace {

using http_server::Reply;
using http_server::Request;

Reply text_reply(std::string body, const char* content_type) {
  Reply r;
  r.body = std::move(body);
  r.content_type = content_type;
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

// The scheme is case-insensitive (RFC 9110, 11.1: "bearer" is "Bearer"); the token is compared in constant time, so
// the answer's timing says nothing of how much of a guess was right.
bool token_matches(const std::string& authorization, const std::string& token) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() != kScheme.size() + token.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  }
  return CRYPTO_memcmp(authorization.data() + kScheme.size(), token.data(), token.size()) == 0;
}

Reply action_reply(const Result<std::string>& done) {
  if (!done) {
    const ErrorKind kind = done.error().kind;
    return http_server::error_reply(kind == ErrorKind::kConfig   ? 404
                                    : kind == ErrorKind::kLocked ? 409
                                                                 : 500,
                                    done.error().message);
  }
  Reply r;
  r.body = nlohmann::json{{"message", *done}}.dump();
  return r;
}

}  // namespace

// An action first stops the pipeline's run, which lands what it committed (up to its grace period): each one is
// carried out on a thread of its own while its request is held, so a slow action takes no server thread and the
// page and /metrics are still answered meanwhile.
struct ServeEndpoint::Shared {
  http_server::Server* server = nullptr;  // set once it exists; outlives every action thread (see ~ServeEndpoint)
  std::mutex mu;
  std::list<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> actions;  // each with its "finished" flag

  void carry_out(std::function<Reply()> action, http_server::Pending* pending) {
    std::lock_guard lock(mu);
    for (auto it = actions.begin(); it != actions.end();) {  // the finished ones are joined as new ones come
      if (!*it->second) {
        ++it;
        continue;
      }
      it->first.join();
      it = actions.erase(it);
    }
    auto finished = std::make_shared<std::atomic<bool>>(false);
    actions.emplace_back(std::thread([this, action = std::move(action), pending, finished] {
                           server->answer(pending, action());
                           *finished = true;
                         }),
                         finished);
  }

  void join_all() {
    std::lock_guard lock(mu);
    for (auto& [thread, finished] : actions) thread.join();
    actions.clear();
  }
};

namespace {

std::optional<Reply> act(Supervisor& supervisor, const std::string& token, const Request& request,
                         ServeEndpoint::Shared& shared, http_server::Pending* pending) {
  if (token.empty()) {
    return http_server::error_reply(403, "actions are off: start serve with SKIPPR_SERVE_TOKEN set to enable them");
  }
  if (!token_matches(request.authorization, token)) {
    return http_server::error_reply(401, "a valid 'Authorization: Bearer <SKIPPR_SERVE_TOKEN>' header is needed");
  }
  // /api/pipelines/<name>/<action>
  const std::string rest = request.path.substr(std::string("/api/pipelines/").size());
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return http_server::error_reply(404, "use /api/pipelines/<name>/<action>");
  shared.carry_out([&supervisor, pipeline = rest.substr(0, slash),
                    action = rest.substr(slash + 1)] { return action_reply(supervisor.act(pipeline, action)); },
                   pending);
  return std::nullopt;  // answered by the action's thread
}

}  // namespace

ServeEndpoint::ServeEndpoint(std::unique_ptr<http_server::Server> server, std::shared_ptr<Shared> shared)
    : server_(std::move(server)), shared_(std::move(shared)) {}

ServeEndpoint::~ServeEndpoint() {
  // The server first: once stopped it starts no action and answers none (answer() does nothing then), so the action
  // threads still running only finish their statement; they are joined before the server object goes.
  server_->stop();
  shared_->join_all();
}

Result<std::unique_ptr<ServeEndpoint>> ServeEndpoint::start(const std::string& address, Supervisor& supervisor,
                                                            std::string token) {
  auto where = parse_host_port(address, "--listen");
  if (!where) return std::unexpected(where.error());
  const http_server::Limits limits{.max_body_bytes = 4096, .max_connections = 64, .client_timeout_seconds = 30};
  auto shared = std::make_shared<Shared>();
  auto server = std::make_unique<http_server::Server>(
      "serve", limits, [](const Request&) { return std::optional<Reply>(); },
      [&supervisor, token = std::move(token), shared](const Request& request,
                                                      http_server::Pending* pending) -> std::optional<Reply> {
        const bool get = request.method == "GET" || request.method == "HEAD";
        if (get && request.path == "/") {
          return text_reply(status_page_html(supervisor.status(), !token.empty()), "text/html; charset=utf-8");
        }
        if (get && request.path == "/api/status") {
          return text_reply(status_json(supervisor.status()), "application/json");
        }
        if (get && request.path == "/metrics") {
          return text_reply(process_metrics().render(), "text/plain; version=0.0.4; charset=utf-8");
        }
        if (request.path.starts_with("/api/pipelines/")) {
          if (request.method == "POST") return act(supervisor, token, request, *shared, pending);
          Reply refused = http_server::error_reply(405, "actions are POST /api/pipelines/<name>/<action>");
          refused.headers.emplace_back("Allow", "POST");
          return refused;
        }
        return http_server::error_reply(404,
                                        "there is /, /api/status, /metrics and POST /api/pipelines/<name>/<action>");
      });
  shared->server = server.get();
  if (auto st = server->listen(where->host, where->port); !st) {
    return fail(st.error().kind, fmt::format("--listen {}: {}", address, st.error().message));
  }
  SKIPPR_TRY(server->start());
  return std::unique_ptr<ServeEndpoint>(new ServeEndpoint(std::move(server), std::move(shared)));
}

}  // namespace skippr
