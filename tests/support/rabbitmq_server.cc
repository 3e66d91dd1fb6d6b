#include "support/rabbitmq_server.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace skippr::test {
namespace {

std::string text(amqp_bytes_t b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

// A logged-in connection with channel 1 open, or null.
amqp_connection_state_t connect(int port) {
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  timeval tv{5, 0};
  if (amqp_socket_open_noblock(socket, "127.0.0.1", port, &tv) != AMQP_STATUS_OK) {
    amqp_destroy_connection(conn);
    return nullptr;
  }
  if (amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest").reply_type !=
      AMQP_RESPONSE_NORMAL) {
    amqp_destroy_connection(conn);
    return nullptr;
  }
  amqp_channel_open(conn, 1);
  if (amqp_get_rpc_reply(conn).reply_type != AMQP_RESPONSE_NORMAL) {
    amqp_destroy_connection(conn);
    return nullptr;
  }
  return conn;
}

}  // namespace

RabbitMqServer::RabbitMqServer() {
  port_ = free_loopback_port();
  const std::string dir = dir_.path().string();
  tls_port_ = free_loopback_port();
  tls_ = make_tls_files(dir_.path());
  write_text(dir_ / "rabbitmq.conf",
             fmt::format(R"(listeners.tcp.1 = 127.0.0.1:{}
listeners.ssl.1 = 127.0.0.1:{}
ssl_options.cacertfile = {}
ssl_options.certfile = {}
ssl_options.keyfile = {}
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
)",
                         port_, tls_port_, tls_.ca.string(), tls_.cert.string(), tls_.key.string()));
  write_text(dir_ / "enabled_plugins", "[].\n");
  std::filesystem::create_directories(dir_ / "mnesia");
  std::filesystem::create_directories(dir_ / "log");
  epmd_port_ = std::to_string(free_loopback_port());
  const std::string& epmd_port = epmd_port_;
  std::vector<std::string> args = {"/usr/bin/env",
                                   "HOME=" + dir,
                                   "RABBITMQ_NODENAME=skippr" + std::to_string(port_) + "@localhost",
                                   "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
                                   "RABBITMQ_NODE_PORT=" + std::to_string(port_),
                                   "RABBITMQ_DIST_PORT=" + std::to_string(free_loopback_port()),
                                   "ERL_EPMD_PORT=" + epmd_port,
                                   "ERL_EPMD_ADDRESS=127.0.0.1",
                                   "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
                                   "RABBITMQ_MNESIA_BASE=" + dir + "/mnesia",
                                   "RABBITMQ_LOG_BASE=" + dir + "/log",
                                   "RABBITMQ_CONFIG_FILE=" + dir + "/rabbitmq.conf",
                                   "RABBITMQ_ENABLED_PLUGINS_FILE=" + dir + "/enabled_plugins",
                                   "RABBITMQ_PID_FILE=" + dir + "/pid",
                                   "/usr/lib/rabbitmq/bin/rabbitmq-server"};
  args = as_service_user("rabbitmq", dir_.path(), std::move(args));
  pid_ = spawn_process(args, dir_.path());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline) {
    if (amqp_connection_state_t conn = connect(port_)) {
      amqp_destroy_connection(conn);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  throw std::runtime_error("rabbitmq-server did not accept a login within 90 s; see " + dir + "/log");
}

RabbitMqServer::~RabbitMqServer() {
  if (pid_ <= 0) return;
  // The broker's Erlang VM and its epmd are children of the start script: stop the whole process group.
  kill(-pid_, SIGTERM);
  kill(pid_, SIGTERM);
  wait_process(pid_);
  // epmd made itself a daemon (a session of its own): stop it through its port.
  if (const int epmd = spawn_process(
          {"/usr/bin/env", "ERL_EPMD_PORT=" + epmd_port_, "ERL_EPMD_ADDRESS=127.0.0.1", "/usr/bin/epmd", "-kill"},
          dir_.path());
      epmd > 0) {
    wait_process(epmd);
  }
}

std::vector<ReceivedMessage> RabbitMqServer::drain(const std::string& queue) const {
  amqp_connection_state_t conn = connect(port_);
  if (!conn) throw std::runtime_error("cannot connect to the test broker");
  std::vector<ReceivedMessage> out;
  // A consumer without acks (the broker pushes as fast as it can); the queue is drained when nothing came for a
  // second, which is long for a broker on loopback with nobody publishing.
  amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue.c_str()), amqp_empty_bytes, 0, /*no_ack=*/1, 0,
                     amqp_empty_table);
  if (amqp_get_rpc_reply(conn).reply_type != AMQP_RESPONSE_NORMAL) throw std::runtime_error("consume failed");
  while (true) {
    amqp_envelope_t envelope;
    timeval tv{1, 0};
    const amqp_rpc_reply_t got = amqp_consume_message(conn, &envelope, &tv, 0);
    if (got.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && got.library_error == AMQP_STATUS_TIMEOUT) break;
    if (got.reply_type != AMQP_RESPONSE_NORMAL) throw std::runtime_error("consuming from " + queue + " failed");
    const amqp_message_t& message = envelope.message;
    ReceivedMessage m;
    m.body = text(message.body);
    m.routing_key = text(envelope.routing_key);
    if (message.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) m.message_id = text(message.properties.message_id);
    if (message.properties._flags & AMQP_BASIC_HEADERS_FLAG) {
      for (int i = 0; i < message.properties.headers.num_entries; ++i) {
        const auto& e = message.properties.headers.entries[i];
        if (text(e.key) == "x-skippr-batch-id" && e.value.kind == AMQP_FIELD_KIND_UTF8) {
          m.batch_id_header = text(e.value.value.bytes);
        }
        if (text(e.key) == "x-skippr-stream" && e.value.kind == AMQP_FIELD_KIND_UTF8) {
          m.stream_header = text(e.value.value.bytes);
        }
      }
    }
    out.push_back(std::move(m));
    amqp_destroy_envelope(&envelope);
    amqp_maybe_release_buffers(conn);
  }
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return out;
}

RabbitMqServer& SharedRabbitMq() {
  static RabbitMqServer server;
  return server;
}

}  // namespace skippr::test
