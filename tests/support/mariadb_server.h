// Test support: a real MariaDB 10.11 server (Debian's mariadb-server) for one test binary, as CDC needs it: binlog
// on in ROW format with full row images and metadata, GTIDs (always on in MariaDB), and a small max_binlog_size so
// the binlog rotates often. Its data lives in a temp folder; it runs as the mysql user on a free loopback port. A
// user skippr (every privilege) connects over TCP with a password; narrower users are the tests' to create.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/process.h"

namespace skippr::test {

class MariaDbServer {
 public:
  // `options`: extra mariadbd options (name without "--" -> value), e.g. {{"binlog-format", "MIXED"}}.
  explicit MariaDbServer(std::map<std::string, std::string> options = {});
  ~MariaDbServer();
  MariaDbServer(const MariaDbServer&) = delete;
  MariaDbServer& operator=(const MariaDbServer&) = delete;

  int port() const { return port_; }
  static constexpr const char* kUser = "skippr";
  static constexpr const char* kPassword = "skippr-test-pw";
  // mysql://skippr:...@127.0.0.1:<port>/<database>
  std::string dsn(const std::string& database) const;
  // A new database; its name is unique per call.
  std::string create_database(const std::string& prefix = "t");

  // Runs each statement in `database` ("" for none); throws std::runtime_error with the server's message.
  void execute_all(const std::string& database, const std::vector<std::string>& statements) const;
  void execute(const std::string& database, const std::string& statement) const {
    execute_all(database, std::vector<std::string>{statement});
  }
  std::vector<std::vector<std::optional<std::string>>> query(const std::string& database, const std::string& sql) const;
  std::string value(const std::string& database, const std::string& sql) const;  // one row, one column ("" for NULL)

  // The server killed at once (SIGKILL: a crash), then started again on the same port and data.
  void crash_and_restart();

 private:
  void start();
  void stop_now();
  TempDir dir_;
  std::map<std::string, std::string> options_;
  int port_ = 0;
  int databases_ = 0;
};

// The binary-wide server (started on first use, stopped when the test binary ends).
MariaDbServer& SharedMariaDb();

}  // namespace skippr::test
