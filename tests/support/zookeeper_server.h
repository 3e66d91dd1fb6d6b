// Test support: a private ZooKeeper (Debian's zookeeper) on a free loopback port, standalone, as the zookeeper user,
// JMX off (it would listen beyond loopback). For ClickHouse's ReplicatedMergeTree.
#pragma once

#include "support/process.h"

namespace skippr::test {

class ZooKeeperServer {
 public:
  ZooKeeperServer();
  ~ZooKeeperServer();
  ZooKeeperServer(const ZooKeeperServer&) = delete;
  ZooKeeperServer& operator=(const ZooKeeperServer&) = delete;
  int port() const { return port_; }

 private:
  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
};

}  // namespace skippr::test
