// Test support for WAL_STORAGE=clustered: "machines" as folders, each with its own DATA_DIR and a loopback port for
// its `skipprd replica` (network namespaces need privileges CI machines may not grant, so two DATA_DIRs and two
// ports stand for two machines), and a throwaway certificate authority for mutual TLS.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "support/process.h"
#include "wal/wal.h"

namespace skippr::test {

// A CA with certificates for 127.0.0.1 / localhost, made with the openssl command.
struct TestPki {
  std::filesystem::path ca, cert, key;  // signed by `ca`
  // Makes a CA named `name` in `dir` and one certificate it signs (used by both machines: same cluster).
  static TestPki make(const std::filesystem::path& dir, const std::string& name);
  // SKIPPR_CLUSTER_TLS_CERT / _KEY / _CA pointing at these files.
  std::map<std::string, std::string> env() const;
};

class Machine {
 public:
  Machine(std::string name, std::map<std::string, std::string> cluster_env);
  ~Machine();  // stops its replica

  const std::string& name() const { return name_; }
  std::filesystem::path data_dir() const { return dir_ / "data"; }
  std::filesystem::path wal_dir(const std::string& pipeline) const {
    return data_dir() / "pipelines" / pipeline / "wal";
  }
  // What this machine's WAL (or copy) of the pipeline holds; an empty inspection when there is none.
  WalInspection wal(const std::string& pipeline = "bikehire") const;
  // Waits until it holds batch `seq` (committed or copied); false after `seconds`.
  bool wait_for_seq(uint64_t seq, double seconds = 60, const std::string& pipeline = "bikehire") const;
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // `skipprd replica --listen 127.0.0.1:<port>` with this DATA_DIR; returns once it accepts connections.
  void start_replica();
  void kill_replica();             // SIGKILL, waited for
  void signal_replica(int signo);  // e.g. SIGSTOP / SIGCONT: a peer that hangs
  bool replica_running() const { return replica_pid_ > 0; }
  void lose_data_dir();  // the machine is replaced: its replica killed, DATA_DIR deleted
  std::string replica_log() const;

  // The environment of a primary on this machine whose peer is `peer`: DATA_DIR, WAL_STORAGE=clustered, SKIPPR_PEERS.
  std::map<std::string, std::string> primary_env(const Machine& peer) const;
  // Runs skipprd with `args` in `cwd` with this DATA_DIR and `env`.
  ProcessResult skipprd(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                        std::map<std::string, std::string> env = {}) const;

 private:
  std::string name_;
  std::map<std::string, std::string> cluster_env_;
  TempDir dir_;
  int port_ = 0;
  int replica_pid_ = -1;
};

}  // namespace skippr::test
