#include "support/synapse_emulator.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace skippr::test {

SynapseEmulator::SynapseEmulator(const PostgresServer& server, int drop_commit_every, int late_commit_every) {
  // Debian's python3, which has python3-psycopg2 (scripts/install-deps.sh).
  const auto port_file = dir_ / "port";
  pid_ = spawn_process(
      {"/usr/bin/python3", std::string(SKIPPR_SOURCE_DIR) + "/tests/support/synapse_emulator.py", "--pg-port",
       std::to_string(server.port()), "--pg-user", PostgresServer::kUser, "--pg-password", PostgresServer::kPassword,
       "--user", kUser, "--password", kPassword, "--port-file", port_file.string(), "--drop-commit-every",
       std::to_string(drop_commit_every), "--late-commit-every", std::to_string(late_commit_every)},
      dir_.path(), {});
  for (int i = 0; i < 300 && port_ == 0; ++i) {
    std::error_code ec;
    if (std::filesystem::exists(port_file, ec)) port_ = std::stoi(read_text(port_file));
    if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (port_ == 0) throw std::runtime_error("the Synapse emulator did not start: " + log());
}

SynapseEmulator::~SynapseEmulator() {
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

std::string SynapseEmulator::log() const { return read_text(dir_ / "spawned.err"); }

namespace {
int lines_starting(const std::string& text, std::string_view start) {
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) n += line.starts_with(start) ? 1 : 0;
  return n;
}
}  // namespace

int SynapseEmulator::dropped_commits() const { return lines_starting(log(), "dropped the answer to COMMIT"); }
int SynapseEmulator::late_commits() const { return lines_starting(log(), "committed late"); }

}  // namespace skippr::test
