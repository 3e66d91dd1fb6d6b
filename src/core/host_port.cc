#include "core/host_port.h"

#include <fmt/format.h>

namespace skippr {

std::string HostPort::str() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

Result<HostPort> parse_host_port(std::string_view text, std::string_view what) {
  auto bad = [&] {
    return fail(ErrorKind::kConfig,
                fmt::format("{}='{}' is not an address; write host:port, e.g. 10.0.0.2:7401", what, text));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string host(text.substr(0, colon));
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = 0;
  for (char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return bad();
    port = port * 10 + (c - '0');
  }
  if (port <= 0 || port > 65535 || host.empty()) return bad();
  return HostPort{std::move(host), port};
}

}  // namespace skippr
