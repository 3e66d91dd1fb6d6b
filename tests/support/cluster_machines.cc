#include "support/cluster_machines.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace skippr::test {

namespace fs = std::filesystem;

TestPki TestPki::make(const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  TestPki pki{dir / (name + "-ca.pem"), dir / (name + "-cert.pem"), dir / (name + "-key.pem")};
  const fs::path ca_key = dir / (name + "-ca-key.pem");
  const fs::path csr = dir / (name + ".csr");
  const fs::path ext = dir / (name + ".ext");
  write_text(ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
  const std::string openssl = program_path("openssl");
  run_or_throw({openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                "/CN=" + name + " test CA", "-keyout", ca_key.string(), "-out", pki.ca.string()},
               dir);
  run_or_throw({openssl, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name + " node", "-keyout",
                pki.key.string(), "-out", csr.string()},
               dir);
  run_or_throw({openssl, "x509", "-req", "-in", csr.string(), "-CA", pki.ca.string(), "-CAkey", ca_key.string(),
                "-CAcreateserial", "-days", "2", "-extfile", ext.string(), "-out", pki.cert.string()},
               dir);
  return pki;
}

std::map<std::string, std::string> TestPki::env() const {
  return {{"SKIPPR_CLUSTER_TLS_CERT", cert.string()},
          {"SKIPPR_CLUSTER_TLS_KEY", key.string()},
          {"SKIPPR_CLUSTER_TLS_CA", ca.string()}};
}

Machine::Machine(std::string name, std::map<std::string, std::string> cluster_env)
    : name_(std::move(name)), cluster_env_(std::move(cluster_env)), port_(free_loopback_port()) {}

Machine::~Machine() {
  if (replica_running()) kill_replica();
}

static bool accepts_connections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

WalInspection Machine::wal(const std::string& pipeline) const {
  std::error_code ec;
  if (!fs::exists(wal_dir(pipeline), ec)) return {};
  auto inspection = Wal::inspect(wal_dir(pipeline));
  if (!inspection) throw std::runtime_error(inspection.error().message);
  return *inspection;
}

bool Machine::wait_for_seq(uint64_t seq, double seconds, const std::string& pipeline) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (wal(pipeline).last_committed_seq < seq) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void Machine::start_replica() {
  if (replica_running()) throw std::runtime_error(name_ + ": its replica already runs");
  std::map<std::string, std::string> env = cluster_env_;
  env["DATA_DIR"] = data_dir().string();
  replica_pid_ = spawn_process({SKIPPRD_BINARY, "replica", "--listen", address()}, dir_.path(), env);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!accepts_connections(port_)) {
    int status = 0;
    if (waitpid(replica_pid_, &status, WNOHANG) == replica_pid_) {
      replica_pid_ = -1;
      throw std::runtime_error(name_ + ": skipprd replica exited: " + replica_log());
    }
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error(name_ + ": replica does not listen");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Machine::kill_replica() {
  if (!replica_running()) return;
  ::kill(replica_pid_, SIGCONT);  // a stopped process must run to die
  ::kill(replica_pid_, SIGKILL);
  wait_process(replica_pid_);
  replica_pid_ = -1;
}

void Machine::signal_replica(int signo) {
  if (replica_running()) ::kill(replica_pid_, signo);
}

void Machine::lose_data_dir() {
  kill_replica();
  fs::remove_all(data_dir());
}

std::string Machine::replica_log() const {
  std::error_code ec;
  return fs::exists(dir_ / "spawned.err", ec) ? read_text(dir_ / "spawned.err") : std::string();
}

std::map<std::string, std::string> Machine::primary_env(const Machine& peer) const {
  std::map<std::string, std::string> env = cluster_env_;
  env["DATA_DIR"] = data_dir().string();
  env["WAL_STORAGE"] = "clustered";
  env["SKIPPR_PEERS"] = peer.address();
  return env;
}

ProcessResult Machine::skipprd(const std::vector<std::string>& args, const fs::path& cwd,
                               std::map<std::string, std::string> env) const {
  std::vector<std::string> argv = {SKIPPRD_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  env.emplace("DATA_DIR", data_dir().string());
  env.emplace("SKIPPR_CONFIG_FILE", "");
  return run_process(argv, cwd, env);
}

}  // namespace skippr::test
