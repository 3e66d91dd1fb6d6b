// Test support: a private ClickHouse server (Debian's clickhouse-server) on free loopback ports, one per test binary,
// run as the clickhouse user from a copy of the packaged config with its ports and paths changed. The default user
// has no password; `query` runs SQL over the HTTP interface.
#pragma once

#include <string>

#include "support/process.h"

namespace skippr::test {

class ClickHouseServer {
 public:
  // `zookeeper_port` > 0: the server uses that ZooKeeper (ReplicatedMergeTree tables), with macro {replica} = r1.
  explicit ClickHouseServer(int zookeeper_port = 0);
  ~ClickHouseServer();
  ClickHouseServer(const ClickHouseServer&) = delete;
  ClickHouseServer& operator=(const ClickHouseServer&) = delete;

  int http_port() const { return http_port_; }
  int tcp_port() const { return tcp_port_; }  // the native protocol, for clickhouse-client
  std::string url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
  // The answer's text (TSV for a SELECT); throws on an error answer.
  std::string query(const std::string& sql) const;
  // A new database for one test.
  std::string fresh_database(const std::string& prefix);

 private:
  TempDir dir_;
  int http_port_ = 0;
  int tcp_port_ = 0;
  int pid_ = 0;
  int databases_ = 0;
};

ClickHouseServer& SharedClickHouse();

}  // namespace skippr::test
