#include "support/postgres_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "support/process.h"

namespace skippr::test {
namespace {

constexpr const char* kBinDir = "/usr/lib/postgresql/15/bin";

// Runs a server binary as the postgres user when we are root (the server refuses to run as root).
ProcessResult run_as_postgres(std::vector<std::string> args, const std::filesystem::path& cwd) {
  if (geteuid() == 0) args.insert(args.begin(), {"/usr/sbin/runuser", "-u", "postgres", "--"});
  return run_process(args, cwd, {}, 120);
}

void check(const ProcessResult& r, const std::string& what) {
  if (r.exit_code != 0)
    throw std::runtime_error(what + " failed (" + std::to_string(r.exit_code) + "): " + r.err + r.out);
}

struct ConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultCloser {
  void operator()(PGresult* r) const { PQclear(r); }
};

std::unique_ptr<PGconn, ConnCloser> connect(const std::string& uri) {
  std::unique_ptr<PGconn, ConnCloser> conn(PQconnectdb(uri.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK)
    throw std::runtime_error("connect: " + std::string(PQerrorMessage(conn.get())));
  return conn;
}

}  // namespace

PostgresServer::PostgresServer(std::map<std::string, std::string> settings) {
  // A directory of its own (mkdtemp): a name made from a port free at the time could be the one another server of
  // this process already uses, whose data a failed initdb here would then delete.
  std::string name = (std::filesystem::temp_directory_path() / fmt::format("skippr-pg-{}-XXXXXX", getpid())).string();
  if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp " + name);
  dir_ = name;
  std::filesystem::permissions(dir_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                         std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                         std::filesystem::perms::others_exec);
  try {
    start(std::move(settings));
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);  // the destructor does not run for a constructor that threw
    throw;
  }
}

void PostgresServer::start(std::map<std::string, std::string> settings) {
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (!pw) throw std::runtime_error("no postgres user: install postgresql-15 (scripts/install-deps.sh)");
    if (chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown " + dir_.string());
  }
  write_text(dir_ / "pwfile", kPassword);
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    (void)chown((dir_ / "pwfile").c_str(), pw->pw_uid, pw->pw_gid);
  }
  check(run_as_postgres({std::string(kBinDir) + "/initdb", "-D", (dir_ / "data").string(), "-U", kUser, "--pwfile",
                         (dir_ / "pwfile").string(), "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8",
                         "--locale=C", "--no-sync"},
                        dir_),
        "initdb");
  settings.try_emplace("wal_level", "logical");
  settings.try_emplace("max_replication_slots", "40");  // every CDC test makes slots of its own
  settings.try_emplace("max_wal_senders", "40");
  // The tests kill skipprd, never the server, so the server's own durability is not under test; this spares the
  // shared disk.
  settings.try_emplace("fsync", "off");
  settings.try_emplace("synchronous_commit", "off");
  settings.try_emplace("full_page_writes", "off");
  std::string conf;
  for (const auto& [k, v] : settings) conf += fmt::format("{} = '{}'\n", k, v);
  std::ofstream(dir_ / "data" / "postgresql.conf", std::ios::app) << conf;
  // Replication connections authenticate like any other TCP connection.
  std::ofstream(dir_ / "data" / "pg_hba.conf", std::ios::app) << "host replication all 127.0.0.1/32 scram-sha-256\n";

  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_loopback_port();
    auto r = run_as_postgres(
        {std::string(kBinDir) + "/pg_ctl", "-D", (dir_ / "data").string(), "-l", (dir_ / "server.log").string(), "-w",
         "-t", "60", "-o",
         fmt::format("-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={}", port_, dir_.string()),
         "start"},
        dir_);
    if (r.exit_code == 0) return;
    if (attempt == 4) check(r, "pg_ctl start (log: " + read_text(dir_ / "server.log") + ")");
  }
}

PostgresServer::~PostgresServer() {
  run_as_postgres({std::string(kBinDir) + "/pg_ctl", "-D", (dir_ / "data").string(), "-m", "immediate", "-w", "stop"},
                  dir_);
  if (!std::getenv("SKIPPR_KEEP_TEST_DIRS")) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string PostgresServer::uri(const std::string& database) const {
  return fmt::format("postgresql://{}:{}@127.0.0.1:{}/{}", kUser, kPassword, port_, database);
}

std::string PostgresServer::create_database(const std::string& prefix) {
  const std::string name = fmt::format("{}_{}", prefix, ++databases_);
  execute("postgres", "CREATE DATABASE " + name);
  return name;
}

void PostgresServer::execute(const std::string& database, const std::string& sql) const {
  auto conn = connect(uri(database));
  std::unique_ptr<PGresult, ResultCloser> res(PQexec(conn.get(), sql.c_str()));
  const auto status = PQresultStatus(res.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error(sql + ": " + PQresultErrorMessage(res.get()));
  }
}

std::vector<std::vector<std::optional<std::string>>> PostgresServer::query(const std::string& database,
                                                                           const std::string& sql) const {
  auto conn = connect(uri(database));
  std::unique_ptr<PGresult, ResultCloser> res(PQexec(conn.get(), sql.c_str()));
  if (PQresultStatus(res.get()) != PGRES_TUPLES_OK)
    throw std::runtime_error(sql + ": " + PQresultErrorMessage(res.get()));
  std::vector<std::vector<std::optional<std::string>>> rows;
  for (int r = 0; r < PQntuples(res.get()); ++r) {
    auto& row = rows.emplace_back();
    for (int c = 0; c < PQnfields(res.get()); ++c) {
      row.push_back(PQgetisnull(res.get(), r, c) ? std::nullopt
                                                 : std::optional<std::string>(PQgetvalue(res.get(), r, c)));
    }
  }
  return rows;
}

std::string PostgresServer::value(const std::string& database, const std::string& sql) const {
  auto rows = query(database, sql);
  if (rows.size() != 1 || rows[0].size() != 1) throw std::runtime_error(sql + ": expected one value");
  return rows[0][0].value_or("");
}

namespace {
PostgresServer* shared_server = nullptr;

class SharedPostgresEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    delete shared_server;
    shared_server = nullptr;
  }
};
}  // namespace

PostgresServer& SharedPostgres() {
  if (!shared_server) {
    shared_server = new PostgresServer();
    ::testing::AddGlobalTestEnvironment(new SharedPostgresEnvironment);  // stops it when the binary's tests end
  }
  return *shared_server;
}

}  // namespace skippr::test
