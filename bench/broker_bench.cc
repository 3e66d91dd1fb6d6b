// Helpers for bench/clickhouse.sh, bench/amqp.sh and bench/warehouse_emulators.sh, around the servers the tests start
// (tests/support):
//   broker_bench clickhouse              starts a private ClickHouse, prints its HTTP URL and native TCP port, lives
//                                        until stdin closes
//   broker_bench rabbitmq                starts a private RabbitMQ, prints its amqp:// URL, lives until stdin closes
//   broker_bench snowflake               starts the Snowflake emulator (tests/support), prints its endpoint and the
//                                        private key file of its user LOADER, lives until stdin closes
//   broker_bench bigquery                starts the BigQuery emulator, prints its endpoint and a service-account key
//                                        file it accepts, lives until stdin closes
//   broker_bench snowflake-staged        the same, with a moto S3 server and a bucket the emulator's stage
//                                        ANALYTICS.PUBLIC.SKIPPR_STAGE reads; prints endpoint, key file, bucket and
//                                        moto's endpoint
//   broker_bench databricks              starts the Databricks emulator, prints its endpoint and the token it accepts,
//                                        lives until stdin closes
//   broker_bench publish PORT QUEUE FILE the peer: each line of FILE as one persistent message to QUEUE (declared
//                                        durable) on the default exchange, in confirm mode with mandatory set, as
//                                        a plain rabbitmq-c program would; returns once every message is confirmed
//   broker_bench count PORT QUEUE        prints how many messages wait in QUEUE
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "support/bigquery_emulator.h"
#include "support/clickhouse_server.h"
#include "support/databricks_emulator.h"
#include "support/moto_server.h"
#include "support/rabbitmq_server.h"
#include "support/snowflake_emulator.h"

#include "clients/aws/s3_client.h"

namespace {

void wait_for_stdin_to_close() {
  char byte;
  while (::read(STDIN_FILENO, &byte, 1) > 0) {
  }
}

bool ok(amqp_rpc_reply_t reply, const char* what) {
  if (reply.reply_type == AMQP_RESPONSE_NORMAL) return true;
  fmt::print(stderr, "{} failed (reply type {})\n", what, static_cast<int>(reply.reply_type));
  return false;
}

amqp_connection_state_t open_guest(int port) {
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  if (!socket || amqp_socket_open(socket, "127.0.0.1", port) != AMQP_STATUS_OK) return nullptr;
  if (!ok(amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest"), "login")) return nullptr;
  amqp_channel_open(conn, 1);
  if (!ok(amqp_get_rpc_reply(conn), "channel.open")) return nullptr;
  return conn;
}

amqp_queue_declare_ok_t* declare(amqp_connection_state_t conn, const std::string& queue, bool passive) {
  auto* declared =
      amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue.c_str()), passive, /*durable=*/1, 0, 0, amqp_empty_table);
  return ok(amqp_get_rpc_reply(conn), "queue.declare") ? declared : nullptr;
}

// Reads one frame if one arrives within `wait_us`; returns the highest delivery tag acked so far.
uint64_t read_confirms(amqp_connection_state_t conn, uint64_t acked, long wait_us, bool& failed) {
  amqp_frame_t frame;
  timeval tv{0, wait_us};
  const int st = amqp_simple_wait_frame_noblock(conn, &frame, &tv);
  if (st == AMQP_STATUS_TIMEOUT) return acked;
  if (st != AMQP_STATUS_OK || frame.frame_type != AMQP_FRAME_METHOD) {
    failed = st != AMQP_STATUS_OK;
    return acked;
  }
  if (frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
    acked = std::max(acked, static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded)->delivery_tag);
  } else {
    failed = true;  // a nack, a return or a close: the bench's setup is wrong
  }
  amqp_maybe_release_buffers(conn);
  return acked;
}

int publish(int port, const std::string& queue, const std::string& file) {
  amqp_connection_state_t conn = open_guest(port);
  if (!conn || !declare(conn, queue, false)) return 1;
  amqp_confirm_select(conn, 1);
  if (!ok(amqp_get_rpc_reply(conn), "confirm.select")) return 1;
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
  props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  props.content_type = amqp_cstring_bytes("application/json");
  std::ifstream in(file);
  uint64_t sent = 0, acked = 0;
  bool failed = false;
  for (std::string line; std::getline(in, line);) {
    amqp_bytes_t body{line.size(), line.data()};
    if (amqp_basic_publish(conn, 1, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), /*mandatory=*/1, 0, &props,
                           body) != AMQP_STATUS_OK) {
      fmt::print(stderr, "publish failed\n");
      return 1;
    }
    if (++sent % 64 == 0) acked = read_confirms(conn, acked, 0, failed);  // take what has arrived, never wait
  }
  while (acked < sent && !failed) acked = read_confirms(conn, acked, 200000, failed);
  if (failed) {
    fmt::print(stderr, "the broker refused a message\n");
    return 1;
  }
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return 0;
}

int count(int port, const std::string& queue) {
  amqp_connection_state_t conn = open_guest(port);
  auto* declared = conn ? declare(conn, queue, true) : nullptr;
  if (!declared) return 1;
  fmt::print("{}\n", declared->message_count);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "clickhouse" && argc == 2) {
    skippr::test::ClickHouseServer server;
    fmt::print("{} {}\n", server.url(), server.tcp_port());
    std::fflush(stdout);
    wait_for_stdin_to_close();
    return 0;
  }
  if (command == "rabbitmq" && argc == 2) {
    skippr::test::RabbitMqServer server;
    fmt::print("{}\n", server.port());
    std::fflush(stdout);
    wait_for_stdin_to_close();
    return 0;
  }
  if (command == "snowflake" && argc == 2) {
    auto& emulator = skippr::test::SharedSnowflake();
    fmt::print("{} {}\n", emulator.endpoint(), skippr::test::snowflake_test_private_key().string());
    std::fflush(stdout);
    wait_for_stdin_to_close();
    return 0;
  }
  if (command == "snowflake-staged" && argc == 2) {
    auto& emulator = skippr::test::SharedSnowflake();
    auto& moto = skippr::test::SharedMoto();
    const std::string bucket = moto.create_bucket("bench");
    auto s3 = std::make_shared<skippr::S3Client>(
        skippr::AwsService{"us-east-1", moto.endpoint(), true, {"testing", "testing", "", "bench"}});
    emulator.add_stage("ANALYTICS.PUBLIC.SKIPPR_STAGE", [bucket, s3](const std::string& path) {
      auto got = s3->get_object_if_exists(bucket, "stage/" + path);
      return got ? *got : std::nullopt;
    });
    fmt::print("{} {} {} {}\n", emulator.endpoint(), skippr::test::snowflake_test_private_key().string(), bucket,
               moto.endpoint());
    std::fflush(stdout);
    wait_for_stdin_to_close();
    return 0;
  }
  if (command == "bigquery" && argc == 2) {
    auto& emulator = skippr::test::SharedBigQuery();
    fmt::print("{} {}\n", emulator.endpoint(), emulator.credentials_file().string());
    std::fflush(stdout);
    wait_for_stdin_to_close();
    return 0;
  }
  if (command == "databricks" && argc == 2) {
    auto& emulator = skippr::test::SharedDatabricks();
    fmt::print("{} {}\n", emulator.endpoint(), skippr::test::DatabricksEmulator::kToken);
    std::fflush(stdout);
    wait_for_stdin_to_close();
    return 0;
  }
  if (command == "publish" && argc == 5) return publish(std::stoi(argv[2]), argv[3], argv[4]);
  if (command == "count" && argc == 4) return count(std::stoi(argv[2]), argv[3]);
  fmt::print(stderr,
             "usage: broker_bench clickhouse | rabbitmq | snowflake | snowflake-staged | bigquery | databricks | "
             "publish PORT QUEUE FILE "
             "| count PORT "
             "QUEUE\n");
  return 2;
}
