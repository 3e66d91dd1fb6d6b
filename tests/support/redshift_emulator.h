// Test support: tests/support/redshift_emulator.py, Redshift's PostgreSQL wire protocol served by the real
// PostgreSQL server of the test binary, with `COPY ... FROM 's3://...' IAM_ROLE ...` read from moto_server (see the
// script for what it covers). One per test that wants one; stopped with it.
#pragma once

#include <map>
#include <string>

#include "support/postgres_server.h"
#include "support/process.h"

namespace skippr::test {

class RedshiftEmulator {
 public:
  // `drop_commit_every` = n > 0: every n-th COMMIT runs, and its answer is lost (the connection closes).
  // `aws_env`: the S3 endpoint and credentials it reads staged objects with (moto_server's env()).
  // `cluster_region`: COPY from a bucket in another region needs REGION (else S3's PermanentRedirect).
  RedshiftEmulator(const PostgresServer& server, const std::map<std::string, std::string>& aws_env,
                   int drop_commit_every = 0, const std::string& cluster_region = "us-east-1");
  ~RedshiftEmulator();
  RedshiftEmulator(const RedshiftEmulator&) = delete;
  RedshiftEmulator& operator=(const RedshiftEmulator&) = delete;

  int port() const { return port_; }
  // COMMITs whose answer the emulator dropped so far.
  int dropped_commits() const;

 private:
  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
};

}  // namespace skippr::test
