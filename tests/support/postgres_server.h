// Test support: a real PostgreSQL 15 server for one test binary. initdb in a temp folder (wal_level=logical, a free
// port, 127.0.0.1 only, its unix socket in the folder), run as the `postgres` user because the server refuses root.
// Starts on construction, stops on destruction; SharedPostgres() is one server per test binary (a gtest Environment).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace skippr::test {

class PostgresServer {
 public:
  // `settings`: extra postgresql.conf lines, e.g. {{"wal_level", "replica"}}.
  explicit PostgresServer(std::map<std::string, std::string> settings = {});
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  static constexpr const char* kUser = "postgres";
  static constexpr const char* kPassword = "skippr-test-pw";
  // A libpq URI for `database` as the superuser (password authentication over TCP).
  std::string uri(const std::string& database = "postgres") const;
  // Creates a fresh database and returns its name (unique per call).
  std::string create_database(const std::string& prefix = "t");

  // Runs `sql` (one or more statements) in `database`; throws std::runtime_error with the server's message.
  void execute(const std::string& database, const std::string& sql) const;
  // Rows of a query, NULL as std::nullopt.
  std::vector<std::vector<std::optional<std::string>>> query(const std::string& database, const std::string& sql) const;
  std::string value(const std::string& database, const std::string& sql) const;  // one row, one column ("" for NULL)

 private:
  void start(std::map<std::string, std::string> settings);  // initdb, configure, pg_ctl start
  std::filesystem::path dir_;
  int port_ = 0;
  int databases_ = 0;
};

// The binary-wide server (started on first use, stopped when the test binary ends).
PostgresServer& SharedPostgres();

}  // namespace skippr::test
