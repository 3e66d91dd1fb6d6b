#include "clients/sftp/sftp_params.h"

#include <fmt/format.h>

#include <cstdlib>

namespace skippr {
namespace {

std::filesystem::path default_known_hosts() {
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/root") / ".ssh" / "known_hosts";
}

}  // namespace

std::vector<ParamSpec> sftp_connection_params() {
  return {
      // No default value: a File source's sftp://host:port/ URL may give the port instead.
      {"port", ParamType::kInt, false, nullptr, "the server's SSH port (default 22)"},
      {"user", ParamType::kString, false, nullptr, "the user to log in as"},
      {"private_key_file", ParamType::kPath, false, nullptr,
       "an unencrypted private key (OpenSSH or PEM) to log in with; or give password"},
      {"password", ParamType::kString, false, nullptr, "use ${VAR} to keep it out of the file"},
      {"known_hosts_file", ParamType::kPath, false, nullptr,
       "the server's host key must be in it (default: ~/.ssh/known_hosts)"},
      {"strict_host_key_checking", ParamType::kBool, false, true,
       "false accepts any host key without checking: only for a trusted network"},
      {"timeout_seconds", ParamType::kInt, false, 30, "for connecting and for every call to the server"},
  };
}

bool sftp_port_given(const nlohmann::json& params) { return params.contains("port") && !params["port"].is_null(); }

Result<SftpOptions> read_sftp_options(const nlohmann::json& p, std::string_view where) {
  SftpOptions o;
  o.host = p.value("host", std::string());
  o.user = p.value("user", std::string());
  const int64_t port = sftp_port_given(p) ? p["port"].get<int64_t>() : int64_t{22};
  const int64_t timeout = p.value("timeout_seconds", int64_t{30});
  if (port <= 0 || port > 65535 || timeout <= 0) {
    return fail(ErrorKind::kConfig, fmt::format("{}: port must be 1-65535 and timeout_seconds positive", where));
  }
  o.port = static_cast<int>(port);
  o.timeout_seconds = static_cast<long>(timeout);
  o.private_key_file = p.value("private_key_file", std::string());
  o.password = p.value("password", std::string());
  if (o.private_key_file.empty() == o.password.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: give private_key_file or password (one of them)", where));
  }
  const std::string known_hosts = p.value("known_hosts_file", std::string());
  o.known_hosts_file = known_hosts.empty() ? default_known_hosts() : std::filesystem::path(known_hosts);
  o.strict_host_key_checking = p.value("strict_host_key_checking", true);
  return o;
}

}  // namespace skippr
