// Helpers for bench/kafka.sh, around librdkafka's mock cluster (a Kafka-protocol broker in-process):
//   kafka_bench cluster TOPIC PARTITIONS   starts a one-broker mock cluster with the topic, prints its bootstrap
//                                          address, and lives until its stdin closes
//   kafka_bench produce BOOTSTRAP TOPIC FIRST COUNT
//                                          produces COUNT JSON messages (ids FIRST..), keyed by id, and waits for
//                                          every delivery
#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>

namespace {

int cluster(const std::string& topic, int partitions) {
  char err[256];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
  rd_kafka_mock_cluster_t* mock = rk ? rd_kafka_mock_cluster_new(rk, 1) : nullptr;
  if (!mock || rd_kafka_mock_topic_create(mock, topic.c_str(), partitions, 1)) {
    fmt::print(stderr, "cannot start the mock cluster: {}\n", err);
    return 1;
  }
  fmt::print("{}\n", rd_kafka_mock_cluster_bootstraps(mock));
  std::fflush(stdout);
  char byte;
  while (::read(STDIN_FILENO, &byte, 1) > 0) {
  }
  rd_kafka_mock_cluster_destroy(mock);
  rd_kafka_destroy(rk);
  return 0;
}

int produce(const std::string& bootstrap, const std::string& topic, long first, long count) {
  char err[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "linger.ms", "20", err, sizeof err);
  static std::atomic<long> delivered{0};
  rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void*) {
    if (!m->err) ++delivered;
  });
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    fmt::print(stderr, "cannot create a producer: {}\n", err);
    return 1;
  }
  for (long id = first; id < first + count; ++id) {
    const std::string key = std::to_string(id);
    const std::string value =
        fmt::format(R"({{"id":{},"name":"user-{}","amount":{}.5,"country":"c{}","tags":{{"k":{},"list":[{},"x"]}}}})",
                    id, id, id, id % 40, id % 7, id % 3);
    while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(key.data(), key.size()),
                             RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 120000);
  rd_kafka_destroy(rk);
  if (delivered.load() != count) {
    fmt::print(stderr, "delivered {} of {} messages\n", delivered.load(), count);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "cluster" && argc == 4) return cluster(argv[2], std::stoi(argv[3]));
  if (mode == "produce" && argc == 6) return produce(argv[2], argv[3], std::stol(argv[4]), std::stol(argv[5]));
  fmt::print(stderr, "usage: kafka_bench cluster TOPIC PARTITIONS | kafka_bench produce BOOTSTRAP TOPIC FIRST COUNT\n");
  return 2;
}
