#include "support/clickhouse_server.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "clients/clickhouse/clickhouse_client.h"

namespace skippr::test {
namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

ClickHouseClient client(int port) {
  ClickHouseConfig config;
  config.url = "http://127.0.0.1:" + std::to_string(port);
  config.where = "test";
  config.timeout_seconds = 60;
  return ClickHouseClient(config);
}

}  // namespace

ClickHouseServer::ClickHouseServer(int zookeeper_port) {
  std::ifstream in("/etc/clickhouse-server/config.xml");
  if (!in) throw std::runtime_error("clickhouse-server is not installed (run make deps)");
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  http_port_ = free_loopback_port();
  const std::string dir = dir_.path().string() + "/";
  replace_all(config, "<http_port>8123</http_port>", "<http_port>" + std::to_string(http_port_) + "</http_port>");
  tcp_port_ = free_loopback_port();
  replace_all(config, "<tcp_port>9000</tcp_port>", "<tcp_port>" + std::to_string(tcp_port_) + "</tcp_port>");
  replace_all(config, "<interserver_http_port>9009</interserver_http_port>",
              "<interserver_http_port>" + std::to_string(free_loopback_port()) + "</interserver_http_port>");
  replace_all(config, "/var/lib/clickhouse/", dir + "data/");
  replace_all(config, "/var/log/clickhouse-server/", dir);
  replace_all(config, "<listen_host>::1</listen_host>", "");
  if (zookeeper_port > 0) {
    replace_all(config, R"(<zookeeper incl="zookeeper-servers" optional="true" />)",
                "<zookeeper><node><host>127.0.0.1</host><port>" + std::to_string(zookeeper_port) +
                    "</port></node></zookeeper>");
    replace_all(config, R"(<macros incl="macros" optional="true" />)", "<macros><replica>r1</replica></macros>");
  }
  write_text(dir_ / "config.xml", config);
  std::filesystem::copy_file("/etc/clickhouse-server/users.xml", dir_ / "users.xml");
  std::filesystem::create_directories(dir_ / "data");
  std::vector<std::string> args = {"/usr/sbin/clickhouse-server", "--config-file=" + (dir_ / "config.xml").string()};
  args = as_service_user("clickhouse", dir_.path(), std::move(args));
  pid_ = spawn_process(args, dir_.path());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (client(http_port_).query("SELECT 1")) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("clickhouse-server did not answer within 30 s; see " + dir + "clickhouse-server.err.log");
}

ClickHouseServer::~ClickHouseServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    wait_process(pid_);
  }
}

std::string ClickHouseServer::query(const std::string& sql) const {
  auto answer = client(http_port_).query(sql);
  if (!answer) throw std::runtime_error(answer.error().message);
  std::string text = *answer;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string ClickHouseServer::fresh_database(const std::string& prefix) {
  const std::string name = prefix + "_" + std::to_string(++databases_);
  query("CREATE DATABASE IF NOT EXISTS " + name);
  return name;
}

ClickHouseServer& SharedClickHouse() {
  static ClickHouseServer server;
  return server;
}

}  // namespace skippr::test
