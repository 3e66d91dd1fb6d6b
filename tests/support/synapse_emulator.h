// Test support: tests/support/synapse_emulator.py, the TDS protocol of a Synapse dedicated SQL pool with the
// statements run on the real PostgreSQL server of the test binary, and COPY INTO read from azurite (see the script
// for what it covers). One per test that wants one; stopped with it.
#pragma once

#include <string>

#include "support/postgres_server.h"
#include "support/process.h"

namespace skippr::test {

class SynapseEmulator {
 public:
  static constexpr const char* kUser = "skippr_loader";
  static constexpr const char* kPassword = "Synapse;pw=1";  // a ';' and a '=' the connection string must quote
  // `drop_commit_every` = n > 0: every n-th COMMIT runs, and its answer is lost (the connection closes).
  // `late_commit_every` = m > 0: every m-th COMMIT loses its answer first and commits 1.5 s later.
  explicit SynapseEmulator(const PostgresServer& server, int drop_commit_every = 0, int late_commit_every = 0);
  ~SynapseEmulator();
  SynapseEmulator(const SynapseEmulator&) = delete;
  SynapseEmulator& operator=(const SynapseEmulator&) = delete;

  int port() const { return port_; }
  // COMMITs whose answer the emulator dropped so far.
  int dropped_commits() const;
  // COMMITs the emulator ran after their answer was lost.
  int late_commits() const;
  // What the emulator wrote to its stderr (unsupported requests, dropped answers).
  std::string log() const;

 private:
  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
};

}  // namespace skippr::test
