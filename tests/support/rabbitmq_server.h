// Test support: a private RabbitMQ broker (Debian's rabbitmq-server) on free loopback ports, one per test binary
// (it takes several seconds to start), run as the rabbitmq user with its own node name, folders and epmd port bound
// to 127.0.0.1, so it meets no other broker and opens nothing beyond loopback. guest/guest may log in over loopback.
#pragma once

#include <string>
#include <vector>

#include "support/process.h"
#include "support/test_keys.h"

namespace skippr::test {

struct ReceivedMessage {
  std::string message_id;
  std::string body;
  std::string batch_id_header;
  std::string stream_header;  // x-skippr-stream, when the source names several streams
  std::string routing_key;
};

class RabbitMqServer {
 public:
  RabbitMqServer();
  ~RabbitMqServer();
  RabbitMqServer(const RabbitMqServer&) = delete;
  RabbitMqServer& operator=(const RabbitMqServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& vhost = "") const {
    return "amqp://guest:guest@127.0.0.1:" + std::to_string(port_) + "/" + vhost;
  }
  // The TLS listener (a certificate for localhost signed by ca_file()), guest/guest on the default vhost.
  std::string tls_url() const { return "amqps://guest:guest@localhost:" + std::to_string(tls_port_) + "/"; }
  std::filesystem::path ca_file() const { return tls_.ca; }
  // Takes every message waiting in `queue` (basic.get with acks) on the default vhost.
  std::vector<ReceivedMessage> drain(const std::string& queue) const;

 private:
  TempDir dir_;
  int port_ = 0;
  int tls_port_ = 0;
  TlsFiles tls_;
  int pid_ = 0;
  std::string epmd_port_;
};

RabbitMqServer& SharedRabbitMq();

}  // namespace skippr::test
