#include "sources/http_server/http_server_options.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace skippr::http_server {

std::vector<ParamSpec> option_params() {
  return {
      {"listen_address", ParamType::kString, false, "127.0.0.1:8080", "host:port to listen on"},
      {"auth_token", ParamType::kString, false, "",
       "required as 'Authorization: Bearer <token>' when set (use ${VAR} to keep it out of the file)"},
      {"ack", ParamType::kString, false, "committed",
       "committed: 200 after the WAL commit (nothing acknowledged is lost); received: 200 at once (faster, a crash "
       "loses what was not yet committed)"},
      {"max_body_bytes", ParamType::kInt, false, 10 << 20, "larger requests get 413"},
      {"max_buffer_bytes", ParamType::kInt, false, 64 << 20,
       "records waiting for a commit; beyond it requests get 503"},
      {"commit_timeout_seconds", ParamType::kDouble, false, 30.0,
       "with ack: committed, a request not committed by then gets 503 (the client retries)"},
      {"max_connections", ParamType::kInt, false, 1000,
       "open connections at most; one more is closed at once (each costs a socket, not a thread)"},
      {"client_timeout_seconds", ParamType::kInt, false, 10,
       "a connection that sends nothing for this long is closed (idle time: a client that trickles bytes keeps its "
       "connection, and costs one socket within max_connections)"},
      {"allow_unauthenticated", ParamType::kBool, false, false,
       "listen on a non-loopback address without auth_token (refused otherwise)"},
      {"streams", ParamType::kStringList, false, nullptr,
       "several streams: each is posted to /ingest/<stream> and lands in its own table; names, or * for any name "
       "of letters, digits, _, . and -. Without it, POST /ingest is one stream"},
  };
}

namespace {

bool is_plain_stream_name(std::string_view name) {
  if (name.empty() || name.size() > 200 || name == "." || name == "..") return false;
  return std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

}  // namespace

std::optional<std::string> stream_of_path(const Options& options, std::string_view path) {
  constexpr std::string_view kIngest = "/ingest";
  if (options.streams.empty()) return path == kIngest ? std::optional<std::string>("") : std::nullopt;
  if (!path.starts_with(kIngest) || path.size() <= kIngest.size() + 1 || path[kIngest.size()] != '/') {
    return std::nullopt;
  }
  const std::string_view name = path.substr(kIngest.size() + 1);
  if (!is_plain_stream_name(name)) return std::nullopt;
  const bool accepted =
      std::ranges::any_of(options.streams, [&](const std::string& s) { return s == "*" || s == name; });
  return accepted ? std::optional<std::string>(name) : std::nullopt;
}

Result<Options> read_options(const ConnectorContext& ctx) {
  const auto& p = ctx.params;
  Options o;
  const std::string address = p.value("listen_address", std::string("127.0.0.1:8080"));
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon != std::string::npos) {
    try {
      port = std::stoi(address.substr(colon + 1));
    } catch (...) {
    }
  }
  if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
    return fail(ErrorKind::kConfig, fmt::format("HttpServer source '{}': listen_address '{}' must be host:port, e.g. "
                                                "0.0.0.0:8080",
                                                ctx.name, address));
  }
  o.host = address.substr(0, colon);
  o.port = port;
  o.auth_token = p.value("auth_token", std::string());
  const std::string ack = p.value("ack", std::string("committed"));
  if (ack == "committed") {
    o.ack = AckMode::kCommitted;
  } else if (ack == "received") {
    o.ack = AckMode::kReceived;
  } else {
    return fail(ErrorKind::kConfig,
                fmt::format("HttpServer source '{}': ack '{}' must be committed or received", ctx.name, ack));
  }
  const int64_t max_body = p.value("max_body_bytes", int64_t{10 << 20});
  const int64_t max_buffer = p.value("max_buffer_bytes", int64_t{64 << 20});
  o.commit_timeout_seconds = p.value("commit_timeout_seconds", 30.0);
  if (max_body <= 0 || max_buffer <= 0 || o.commit_timeout_seconds <= 0) {
    return fail(ErrorKind::kConfig, fmt::format("HttpServer source '{}': max_body_bytes, max_buffer_bytes and "
                                                "commit_timeout_seconds must be positive",
                                                ctx.name));
  }
  o.max_body_bytes = static_cast<size_t>(max_body);
  o.max_buffer_bytes = static_cast<size_t>(max_buffer);
  const int64_t max_connections = p.value("max_connections", int64_t{1000});
  const int64_t client_timeout = p.value("client_timeout_seconds", int64_t{10});
  if (max_connections <= 0 || max_connections > 1'000'000 || client_timeout <= 0 || client_timeout > 86'400) {
    return fail(ErrorKind::kConfig, fmt::format("HttpServer source '{}': max_connections must be 1 to 1000000 and "
                                                "client_timeout_seconds 1 to 86400",
                                                ctx.name));
  }
  o.max_connections = static_cast<unsigned>(max_connections);
  o.client_timeout_seconds = static_cast<unsigned>(client_timeout);
  // Without a token, anyone who can reach the address can write records: only loopback is safe to leave open.
  const std::string& host = o.host;
  const bool loopback = host == "localhost" || host.starts_with("127.") || host == "::1" || host == "[::1]";
  if (o.auth_token.empty() && !loopback && !p.value("allow_unauthenticated", false)) {
    return fail(ErrorKind::kConfig,
                fmt::format("HttpServer source '{}': listen_address {} is reachable from other machines and there is "
                            "no auth_token; set auth_token (e.g. \"${{INGEST_TOKEN}}\"), listen on 127.0.0.1, or say "
                            "allow_unauthenticated: true",
                            ctx.name, address));
  }
  o.streams = p.value("streams", std::vector<std::string>{});
  for (const auto& stream : o.streams) {
    if (stream != "*" && !is_plain_stream_name(stream)) {
      return fail(ErrorKind::kConfig, fmt::format("HttpServer source '{}': stream '{}' must be a name of letters, "
                                                  "digits, _, . and - (or * for any such name)",
                                                  ctx.name, stream));
    }
  }
  if (o.auth_token.empty() && !loopback) {
    spdlog::warn("HttpServer source '{}': no auth_token, anyone who can reach {} can send records", ctx.name, address);
  }
  return o;
}

}  // namespace skippr::http_server
