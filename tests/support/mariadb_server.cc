#include "support/mariadb_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "clients/mariadb/maria_client.h"

namespace skippr::test {
namespace {

MariaConnection connect_or_throw(int port, const std::string& database, const std::string& user,
                                 const std::string& password) {
  nlohmann::json params = {{"host", "127.0.0.1"},
                           {"port", port},
                           {"user", user},
                           {"password", password},
                           {"database", database.empty() ? "mysql" : database}};
  auto conn = MariaConnection::connect(params, "test");
  if (!conn) throw std::runtime_error(conn.error().message);
  return std::move(*conn);
}

}  // namespace

MariaDbServer::MariaDbServer(std::map<std::string, std::string> options) : options_(std::move(options)) {
  std::vector<std::string> install = {"/usr/bin/mariadb-install-db",
                                      "--no-defaults",
                                      "--datadir=" + (dir_ / "data").string(),
                                      "--auth-root-authentication-method=normal",
                                      "--skip-test-db",
                                      "--skip-name-resolve"};
  auto r = run_process(as_service_user("mysql", dir_.path(), install), dir_.path(), {}, 120);
  if (r.exit_code != 0) throw std::runtime_error("mariadb-install-db failed: " + r.err + r.out);
  start();
  // The tests' user, over TCP with a password (root has only the unix socket).
  auto r2 = run_process({"/usr/bin/mariadb", "--no-defaults", "-uroot", "--socket=" + (dir_ / "sock").string(), "-e",
                         fmt::format("CREATE USER '{0}'@'%' IDENTIFIED BY '{1}'; GRANT ALL PRIVILEGES ON *.* TO "
                                     "'{0}'@'%' WITH GRANT OPTION;",
                                     kUser, kPassword)},
                        dir_.path(), {}, 60);
  if (r2.exit_code != 0) throw std::runtime_error("creating the test user failed: " + r2.err + r2.out);
}

void MariaDbServer::start() {
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (port_ == 0 || attempt > 0) port_ = free_loopback_port();
    std::vector<std::string> args = {
        "/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + (dir_ / "data").string(), fmt::format("--port={}", port_),
        "--bind-address=127.0.0.1", "--socket=" + (dir_ / "sock").string(),
        "--pid-file=" + (dir_ / "mariadbd.pid").string(), "--log-error=" + (dir_ / "error.log").string(),
        "--log-bin=" + (dir_ / "data" / "binlog").string(), "--server-id=1", "--skip-name-resolve",
        "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci", "--max-connections=300",
        // The tests kill skipprd and, once, the server; durability of the server's
        // own last transactions is not under test, and this spares the shared disk.
        "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--innodb-buffer-pool-size=128M"};
    std::map<std::string, std::string> options = {{"binlog-format", "ROW"},
                                                  {"binlog-row-image", "FULL"},
                                                  {"binlog-row-metadata", "FULL"},
                                                  {"max-binlog-size", "1048576"}};
    for (const auto& [k, v] : options_) options[k] = v;
    for (const auto& [k, v] : options) args.push_back(fmt::format("--{}={}", k, v));
    spawn_process(as_service_user("mysql", dir_.path(), args), dir_.path());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = run_process(
          {"/usr/bin/mariadb-admin", "--no-defaults", "-uroot", "--socket=" + (dir_ / "sock").string(), "ping"},
          dir_.path(), {}, 10);
      if (r.exit_code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (read_text(dir_ / "error.log").find("Do you already have another server running on port") !=
          std::string::npos) {
        break;
      }
    }
    stop_now();
  }
  throw std::runtime_error("mariadbd did not start; see " + (dir_ / "error.log").string() + ": " +
                           read_text(dir_ / "error.log"));
}

void MariaDbServer::stop_now() {
  std::ifstream in(dir_ / "mariadbd.pid");
  int pid = 0;
  if (in >> pid && pid > 0) {
    kill(pid, SIGKILL);
    for (int i = 0; i < 200 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::filesystem::remove(dir_ / "mariadbd.pid");
}

MariaDbServer::~MariaDbServer() { stop_now(); }

void MariaDbServer::crash_and_restart() {
  stop_now();
  start();  // on the same port (start keeps it on its first attempt): the pipelines' dsn names it
}

std::string MariaDbServer::dsn(const std::string& database) const {
  return fmt::format("mysql://{}:{}@127.0.0.1:{}/{}", kUser, kPassword, port_, database);
}

std::string MariaDbServer::create_database(const std::string& prefix) {
  const std::string name = fmt::format("{}_{}", prefix, ++databases_);
  execute("", "CREATE DATABASE " + name);
  return name;
}

void MariaDbServer::execute_all(const std::string& database, const std::vector<std::string>& statements) const {
  auto conn = connect_or_throw(port_, database, kUser, kPassword);
  for (const auto& s : statements) {
    if (auto done = conn.execute(s); !done) throw std::runtime_error(s + ": " + done.error().message);
  }
}

std::vector<std::vector<std::optional<std::string>>> MariaDbServer::query(const std::string& database,
                                                                          const std::string& sql) const {
  auto conn = connect_or_throw(port_, database, kUser, kPassword);
  auto rows = conn.query(sql);
  if (!rows) throw std::runtime_error(sql + ": " + rows.error().message);
  return rows->rows;
}

std::string MariaDbServer::value(const std::string& database, const std::string& sql) const {
  auto rows = query(database, sql);
  if (rows.size() != 1 || rows[0].size() != 1) throw std::runtime_error(sql + ": expected one value");
  return rows[0][0].value_or("");
}

namespace {
MariaDbServer* shared_server = nullptr;

class SharedMariaDbEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    delete shared_server;
    shared_server = nullptr;
  }
};
}  // namespace

MariaDbServer& SharedMariaDb() {
  if (!shared_server) {
    shared_server = new MariaDbServer();
    ::testing::AddGlobalTestEnvironment(new SharedMariaDbEnvironment);
  }
  return *shared_server;
}

}  // namespace skippr::test
