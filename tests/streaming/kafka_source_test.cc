// Kafka source against librdkafka's mock cluster (a real Kafka-protocol broker) that runs in a helper process — this
// test binary started with SKIPPR_TEST_KAFKA_MOCK=1 — so skipprd can be SIGKILLed and restarted against it.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "core/connector.h"
#include "streaming/http_test_client.h"
#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

using namespace std::chrono_literals;
constexpr const char* kTopic = "events";
constexpr int kPartitions = 3;

// Helper-process mode: start a one-broker mock cluster with the topic, print its address, live until killed (or
// until the test that started it is gone).
[[noreturn]] void run_mock_cluster() {
  char err[256];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
  rd_kafka_mock_cluster_t* cluster = rk ? rd_kafka_mock_cluster_new(rk, 1) : nullptr;
  if (!cluster || rd_kafka_mock_topic_create(cluster, kTopic, kPartitions, 1)) {
    std::fprintf(stderr, "cannot start the mock cluster: %s\n", err);
    _exit(1);
  }
  // More topics, named in SKIPPR_TEST_KAFKA_TOPICS (comma-separated), two partitions each.
  std::string more = std::getenv("SKIPPR_TEST_KAFKA_TOPICS") ? std::getenv("SKIPPR_TEST_KAFKA_TOPICS") : "";
  for (size_t begin = 0; begin < more.size();) {
    const size_t end = std::min(more.find(',', begin), more.size());
    if (rd_kafka_mock_topic_create(cluster, more.substr(begin, end - begin).c_str(), 2, 1)) _exit(1);
    begin = end + 1;
  }
  std::printf("%s\n", rd_kafka_mock_cluster_bootstraps(cluster));
  std::fflush(stdout);
  const pid_t parent = getppid();
  while (getppid() == parent) std::this_thread::sleep_for(200ms);
  _exit(0);
}
const bool kMockMode = [] {
  if (std::getenv("SKIPPR_TEST_KAFKA_MOCK")) run_mock_cluster();
  return false;
}();

struct MockCluster {
  TempDir dir;
  int pid = 0;
  std::string bootstrap;
  explicit MockCluster(const std::string& more_topics = "") {
    pid = spawn_process({"/proc/self/exe"}, dir.path(),
                        {{"SKIPPR_TEST_KAFKA_MOCK", "1"}, {"SKIPPR_TEST_KAFKA_TOPICS", more_topics}});
    for (int i = 0; i < 500 && bootstrap.empty(); ++i) {
      std::this_thread::sleep_for(10ms);
      const std::string out = read_text(dir / "spawned.out");
      if (auto nl = out.find('\n'); nl != std::string::npos) bootstrap = out.substr(0, nl);
    }
  }
  ~MockCluster() {
    kill(pid, SIGKILL);
    wait_process(pid);
  }
};

std::string message_json(int64_t id) {
  return fmt::format(R"({{"id":{},"name":"user-{}","amount":{}.5,"tags":{{"k":{},"list":[{},"x"]}}}})", id, id, id,
                     id % 7, id % 3);
}

// Produces ids [first, first + count) keyed by id; returns how many were delivered (acks=all by default).
class Producer {
 public:
  explicit Producer(const std::string& bootstrap) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[256];
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "linger.ms", "20", err, sizeof err);
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* self) {
      if (!m->err) ++static_cast<Producer*>(self)->delivered;
    });
    rd_kafka_conf_set_opaque(conf, this);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  }
  ~Producer() { rd_kafka_destroy(rk_); }
  // `committed_total` tells how far the pipeline got: the mock broker keeps only ~5 MB a partition (older messages
  // are deleted, as retention would), so production never runs more than kMaxLag ahead of the WAL commits.
  void produce(int64_t first, int64_t count, const std::function<int64_t()>& committed_total) {
    constexpr int64_t kMaxLag = 60000;
    for (int64_t id = first; id < first + count; ++id) {
      if (id % 5000 == 0) {
        for (int i = 0; i < 1200 && id - committed_total() > kMaxLag; ++i) std::this_thread::sleep_for(100ms);
      }
      const std::string key = std::to_string(id), value = message_json(id);
      while (rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_KEY(key.data(), key.size()),
                               RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                               RD_KAFKA_V_HEADER("origin", "test", 4), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk_, 10);
      }
      rd_kafka_poll(rk_, 0);
    }
    rd_kafka_flush(rk_, 60000);
  }
  // Produces `values` in order to one partition (one key), waiting until all are delivered.
  void produce_values(const std::vector<std::string>& values, const std::string& key = "k",
                      const char* topic = kTopic) {
    for (const auto& value : values) {
      rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key.data(), key.size()),
                        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    }
    rd_kafka_flush(rk_, 30000);
  }
  void produce_ids(int64_t first, int64_t count) {
    std::vector<std::string> values;
    for (int64_t id = first; id < first + count; ++id) values.push_back(message_json(id));
    produce_values(values, "");
  }
  std::atomic<int64_t> delivered = 0;

 private:
  rd_kafka_t* rk_ = nullptr;
};

// Sum of the consumer group's committed offsets (skipprd commits them right after each WAL commit).
int64_t group_committed_total(const std::string& bootstrap, const std::string& group) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[256];
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(kPartitions);
  for (int p = 0; p < kPartitions; ++p) rd_kafka_topic_partition_list_add(parts, kTopic, p);
  int64_t total = 0;
  if (!rd_kafka_committed(rk, parts, 5000)) {
    for (int i = 0; i < parts->cnt; ++i) total += std::max<int64_t>(0, parts->elems[i].offset);
  }
  rd_kafka_topic_partition_list_destroy(parts);
  rd_kafka_destroy(rk);
  return total;
}

// A second member of the consumer group for a few seconds: the group gives it every partition (skipprd assigns its
// partitions itself and is no member), and skipprd must go on reading them all. It never commits.
int join_group_briefly(const std::string& bootstrap, const std::string& group) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[256];
  for (auto [k, v] : std::map<std::string, std::string>{{"bootstrap.servers", bootstrap},
                                                        {"group.id", group},
                                                        {"enable.auto.commit", "false"},
                                                        {"session.timeout.ms", "6000"},
                                                        {"heartbeat.interval.ms", "500"}}) {
    rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, kTopic, RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  int assigned = 0;
  const auto until = std::chrono::steady_clock::now() + 40s;
  while (std::chrono::steady_clock::now() < until && assigned == 0) {
    if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100)) rd_kafka_message_destroy(m);
    rd_kafka_topic_partition_list_t* mine = nullptr;
    if (!rd_kafka_assignment(rk, &mine)) {
      assigned = mine->cnt;
      rd_kafka_topic_partition_list_destroy(mine);
    }
  }
  for (int i = 0; i < 10; ++i) {  // hold the partitions a moment while skipprd keeps running
    if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100)) rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return assigned;
}

std::string kafka_config(const std::string& bootstrap, const std::string& more = "") {
  return fmt::format(R"(data_sources:
  stream:
    Kafka:
      brokers: "{}"
      topics: [{}]
      group_id: skippr-test
      properties: {{ session.timeout.ms: "6000", heartbeat.interval.ms: "500" }}{}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: events }}
pipelines:
  kafka:
    data_source: data_sources.stream
    data_sink: data_sinks.db
)",
                     bootstrap, kTopic, more);
}

int64_t messages_to_produce() {
  const char* n = std::getenv("SKIPPR_KAFKA_TEST_MESSAGES");
  return n ? std::atoll(n) : 500000;
}

// Produces while skipprd is SIGKILLed repeatedly; DuckDB must end with every message exactly once, with the content
// produced.
TEST(KafkaSource, EveryMessageLandsOnceThroughKills) {
  const int64_t total = messages_to_produce();
  constexpr int kKills = 4;
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  PipelineFixture f(kafka_config(cluster.bootstrap));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_SECONDS", "0.5"}};

  Producer producer(cluster.bootstrap);
  std::thread produce(
      [&] { producer.produce(0, total, [&] { return group_committed_total(cluster.bootstrap, "skippr-test"); }); });
  int pid = spawn_sync(f, "kafka", env);
  const auto db = f.path("out.duckdb");
  for (int k = 0; k < kKills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500 + 700 * k));
    kill(pid, SIGKILL);
    EXPECT_EQ(wait_process(pid), 137);
    pid = spawn_sync(f, "kafka", env);
  }
  produce.join();
  EXPECT_EQ(producer.delivered.load(), total);
  std::this_thread::sleep_for(2s);
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_process(pid), 0) << read_text(f.path("spawned.err"));
  // Whatever is left: --once ends when every partition is read to its end.
  auto last = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, env, 300);
  ASSERT_EQ(last.exit_code, 0) << last.err;

  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM events"), std::to_string(total));
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM (SELECT DISTINCT \"partition\", \"offset\" FROM events)"),
            std::to_string(total));
  EXPECT_EQ(duckdb_value(db, "SELECT count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM events"),
            fmt::format("{} 0 {}", total, total - 1));
  EXPECT_EQ(duckdb_value(db, "SELECT count(DISTINCT \"partition\") FROM events"), std::to_string(kPartitions));
  // Content: each row is the message produced for its id, key and header included.
  EXPECT_EQ(duckdb_value(db,
                         "SELECT count(*) FROM events WHERE topic <> 'events' OR decode(key) <> id::VARCHAR OR "
                         "name <> 'user-' || id OR amount <> id + 0.5 OR tags::VARCHAR <> "
                         "'{\"k\":' || (id % 7) || ',\"list\":[' || (id % 3) || ',\"x\"]}' OR "
                         "headers::VARCHAR <> '{\"origin\":\"test\"}' OR value IS NOT NULL"),
            "0");
  // Offsets are dense per partition: nothing skipped.
  EXPECT_EQ(duckdb_value(db,
                         "SELECT sum(max_o - min_o + 1 - n) FROM (SELECT max(\"offset\") max_o, min(\"offset\") "
                         "min_o, count(*) n FROM events GROUP BY \"partition\")"),
            "0");
  std::printf("[ metrics  ] messages=%lld kills=%d\n", static_cast<long long>(total), kKills);
}

// Another member of the same consumer group (a second pipeline given the same group_id, a monitoring tool) takes
// nothing from the pipeline: skipprd assigns its partitions itself, so it goes on reading all of them. (While
// another member is in the group, the broker refuses skipprd's offset commits: the group's offsets then only lag;
// the WAL holds the real ones.)
TEST(KafkaSource, AnotherMemberOfTheGroupTakesNothingFromThePipeline) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  PipelineFixture f(kafka_config(cluster.bootstrap));
  Producer producer(cluster.bootstrap);
  producer.produce_ids(0, 1000);
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_SECONDS", "0.2"}};
  const int pid = spawn_sync(f, "kafka", env);
  const int taken = join_group_briefly(cluster.bootstrap, "skippr-test");
  producer.produce_ids(1000, 1000);
  std::this_thread::sleep_for(2s);
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_process(pid), 0) << read_text(f.path("spawned.err"));
  auto rest = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, env, 120);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  EXPECT_GT(taken, 0) << "the other member never got a partition";
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) || ' ' || count(DISTINCT id) FROM events"),
            "2000 2000");
}

// After a SIGKILL the next run reads at once: it assigns the partitions from the WAL's offsets, so nothing waits for
// the dead process's group session to expire (session.timeout.ms stays at librdkafka's 45 s here; a run that joined
// the group would wait about that long before its first message).
TEST(KafkaSource, ARestartAfterSigkillDoesNotWaitForTheGroup) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  std::string config = kafka_config(cluster.bootstrap);
  const std::string fast_session = R"(properties: { session.timeout.ms: "6000", heartbeat.interval.ms: "500" })";
  config.replace(config.find(fast_session), fast_session.size(), "properties: {}");
  PipelineFixture f(config);
  Producer producer(cluster.bootstrap);
  producer.produce_ids(0, 1000);
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_SECONDS", "0.2"}};
  const int pid = spawn_sync(f, "kafka", env);
  for (int i = 0; i < 300 && group_committed_total(cluster.bootstrap, "skippr-test") < 1000; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(group_committed_total(cluster.bootstrap, "skippr-test"), 1000) << read_text(f.path("spawned.err"));
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_process(pid), 137);

  producer.produce_ids(1000, 1000);
  const auto started = std::chrono::steady_clock::now();
  auto again = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, env, 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_LT(seconds, 15) << "the restart waited, as for a consumer group to form";
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) || ' ' || count(DISTINCT id) FROM events"),
            "2000 2000");
  std::printf("[ metrics  ] restart after SIGKILL to the end of an --once run: %.2f s\n", seconds);
}

// --once reads up to the ends the partitions had when it started, then ends, even while producers keep writing
// (a run that waited for an empty poll would chase them for as long as they write).
TEST(KafkaSource, AnOnceRunEndsWhileProducersKeepWriting) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  PipelineFixture f(kafka_config(cluster.bootstrap));
  Producer producer(cluster.bootstrap);
  producer.produce_ids(0, 3000);
  std::atomic<bool> stop{false};
  std::thread keep_writing([&] {
    for (int64_t first = 3000; !stop; first += 200) {
      producer.produce_ids(first, 200);
      std::this_thread::sleep_for(10ms);
    }
  });
  const auto started = std::chrono::steady_clock::now();
  auto once = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  stop = true;
  keep_writing.join();
  ASSERT_EQ(once.exit_code, 0) << once.err;
  EXPECT_LT(seconds, 30) << "the --once run chased the producer";
  const auto db = f.path("out.duckdb");
  // Everything there at the start, each once; perhaps some of what came after.
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM events WHERE id < 3000"), "3000");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) - count(DISTINCT id) FROM events"), "0");
}

// Issue 21: each poll tells the consumer lag past its position (the metric skippr_source_messages_waiting): every
// partition's high watermark minus the next offset to read. Exact while nothing is produced; afterwards it counts
// what the last fetches told, and reaches 0 when all is read.
TEST(KafkaSource, EveryPollTellsTheConsumerLagPastItsPosition) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  Producer producer(cluster.bootstrap);
  producer.produce_ids(0, 3000);
  ConnectorContext ctx;
  ctx.name = "stream";
  ctx.pipeline = "kafka";
  ctx.params = {{"brokers", cluster.bootstrap}, {"topics", {kTopic}}, {"group_id", "skippr-lag"}};
  auto made = find_connector("Kafka", true)->make_source(ctx);
  ASSERT_TRUE(made) << made.error().message;
  Source& source = **made;
  ASSERT_TRUE(source.open());
  ASSERT_TRUE(source.seek(Position{}));
  ASSERT_TRUE(find_connector("Kafka", true)->backlog);
  EXPECT_EQ(find_connector("Kafka", true)->backlog->name, "messages") << "the unit its spec declares";
  uint64_t read = 0;
  for (int i = 0; i < 400 && read < 3000; ++i) {
    auto p = source.poll(Budget{250, 1 << 20});
    ASSERT_TRUE(p) << p.error().message;
    read += p->records.rows;
    ASSERT_TRUE(p->backlog);
    EXPECT_EQ(*p->backlog, 3000 - read) << "after " << read << " messages read";
  }
  ASSERT_EQ(read, 3000u);

  producer.produce_ids(3000, 600);
  uint64_t most = 0, last = 1;
  for (int i = 0; i < 400 && (read < 3600 || last > 0); ++i) {
    auto p = source.poll(Budget{100, 1 << 20});
    ASSERT_TRUE(p) << p.error().message;
    read += p->records.rows;
    ASSERT_TRUE(p->backlog);
    last = *p->backlog;
    most = std::max(most, last);
    EXPECT_LE(last, 3600 - read) << "never more than is there";
  }
  EXPECT_EQ(read, 3600u);
  EXPECT_EQ(last, 0u);
  EXPECT_GT(most, 0u) << "the new messages were seen waiting";
}

// `start: latest` pins each partition's end on the first run, even when that run reads nothing, so what is produced
// between runs is read by the next one instead of being skipped by a later "latest".
TEST(KafkaSource, StartLatestKeepsWhatIsProducedBetweenRuns) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  PipelineFixture f(kafka_config(cluster.bootstrap, "\n      start: latest"));
  Producer producer(cluster.bootstrap);
  producer.produce_ids(0, 10);  // before the pipeline ever ran: `latest` skips these
  auto first = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  producer.produce_ids(10, 10);
  auto second = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  producer.produce_ids(20, 10);
  auto third = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  ASSERT_EQ(third.exit_code, 0) << third.err;
  const auto db = f.path("out.duckdb");
  EXPECT_EQ(
      duckdb_value(db, "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM events"),
      "20 20 10 29");
}

// RESET reads the topic from the start again, although the consumer group has committed offsets: the WAL owns them.
TEST(KafkaSource, ResetReadsFromTheStartDespiteTheGroupsOffsets) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  PipelineFixture f(kafka_config(cluster.bootstrap));
  Producer producer(cluster.bootstrap);
  producer.produce_ids(0, 100);
  auto first = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  for (int i = 0; i < 50 && group_committed_total(cluster.bootstrap, "skippr-test") < 100; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(group_committed_total(cluster.bootstrap, "skippr-test"), 100) << "the group's offsets were not committed";
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE kafka"}).exit_code, 0);
  auto again = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) || ' ' || count(DISTINCT id) FROM events"), "200 100");
}

// Brokers nobody answers on: --once ends with exit 75 and one sentence, not an endless wait, and librdkafka's own
// lines (`%3|...|FAIL|`) do not reach stderr raw.
TEST(KafkaSource, UnreachableBrokersEndOnceWithRetryLater) {
  PipelineFixture f(kafka_config("127.0.0.1:1", "\n      connect_timeout_seconds: 2"));
  const auto started = std::chrono::steady_clock::now();
  auto run = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 60);
  EXPECT_EQ(run.exit_code, 75) << run.err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
  EXPECT_NE(run.err.find("no broker of '127.0.0.1:1' answered within 2 s"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("%3|"), std::string::npos) << run.err;
}

// A pattern that matches no topic: --once has nothing to read and ends.
TEST(KafkaSource, PatternThatMatchesNothingEndsOnce) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  std::string config = kafka_config(cluster.bootstrap);
  config.replace(config.find("topics: [events]"), std::string("topics: [events]").size(), "pattern: '^nothing\\\\..*'");
  PipelineFixture f(config);
  auto run = f.skipprd({"sync", "--pipeline", "kafka", "--once", "--log"}, {}, 60);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("no topic on the brokers matches"), std::string::npos) << run.err;
}

// A topic named in `topics` that the brokers do not have: an --once run asks again for connect_timeout_seconds (a
// topic just created can be listed in error for a moment), says which topic it could not read, reads the others and
// ends.
TEST(KafkaSource, ANamedTopicTheBrokersDoNotHaveIsAskedForThenNamed) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  std::string config = kafka_config(cluster.bootstrap, "\n      connect_timeout_seconds: 2");
  config.replace(config.find("topics: [events]"), std::string("topics: [events]").size(), "topics: [events, missing]");
  PipelineFixture f(config);
  Producer producer(cluster.bootstrap);
  producer.produce_ids(0, 50);
  const auto started = std::chrono::steady_clock::now();
  auto run = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 60);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_GE(seconds, 2) << "it did not wait for the missing topic";
  EXPECT_NE(run.err.find("missing (not on the brokers) cannot be read yet"), std::string::npos) << run.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) || ' ' || count(DISTINCT id) FROM events"), "50 50");
}

// A field whose type changes between messages neither blocks the pipeline nor drops the message's columns: within a
// poll the batch is cut before the message; across batches the sink converts (text column) or rejects (int column).
TEST(KafkaSource, FieldTypeChangesLandOrAreRejected) {
  MockCluster cluster;
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  PipelineFixture f(kafka_config(cluster.bootstrap));
  Producer producer(cluster.bootstrap);
  producer.produce_values({R"({"id":1,"a":"x","n":1})", R"({"id":2,"a":5,"n":2})", R"({"id":3,"a":"y","n":3})"});
  auto first = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  producer.produce_values({R"({"id":4,"a":6,"n":"four"})"});
  auto second = f.skipprd({"sync", "--pipeline", "kafka", "--once"}, {}, 120);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto db = f.path("out.duckdb");
  EXPECT_EQ(duckdb_value(db, "SELECT string_agg(id || ':' || a || ':' || n, ',' ORDER BY id) FROM events"),
            "1:x:1,2:5:2,3:y:3");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM events WHERE value IS NOT NULL"), "0");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM events__skippr_rejected WHERE record LIKE '%four%'"), "1");
}

// stream_per_topic: ten topics, each a stream landed in its own table with its own fields only. Under kill -9 every
// table ends equal to an unkilled run's: each message once, the same content.
TEST(KafkaSource, TenTopicsLandInTenTablesExactlyOnceUnderKills) {
  constexpr int kTopics = 10, kPerTopic = 3000;
  std::vector<std::string> topics;
  for (int t = 0; t < kTopics; ++t) topics.push_back(fmt::format("shop.t{}", t));
  MockCluster cluster(fmt::format("{}", fmt::join(topics, ",")));
  ASSERT_FALSE(cluster.bootstrap.empty()) << read_text(cluster.dir / "spawned.err");
  Producer producer(cluster.bootstrap);
  for (int t = 0; t < kTopics; ++t) {
    std::vector<std::string> values;
    for (int i = 0; i < kPerTopic; ++i) {
      values.push_back(fmt::format(R"({{"id":{},"f{}":"v{}-{}","n":{}}})", i, t, t, i, i * t));
    }
    // Two keys: both partitions of the topic get messages.
    producer.produce_values(std::vector(values.begin(), values.begin() + kPerTopic / 2), "a", topics[t].c_str());
    producer.produce_values(std::vector(values.begin() + kPerTopic / 2, values.end()), "b", topics[t].c_str());
  }
  auto config = [&] {
    return fmt::format(R"(data_sources:
  stream:
    Kafka: {{ brokers: "{}", topic_pattern: '^shop\..*', group_id: streams-test, stream_per_topic: true }}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: "k_{{stream}}" }}
pipelines:
  kafka:
    data_source: data_sources.stream
    data_sink: data_sinks.db
)",
                       cluster.bootstrap);
  };
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "60000"}};
  PipelineFixture clean(config());
  auto run = clean.skipprd({"sync", "--pipeline", "kafka", "--once"}, env, 300);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  PipelineFixture killed(config());
  auto chaos_env = env;
  chaos_env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.3";
  chaos_env["SKIPPR_CHAOS_MAX_SECONDS"] = "1.5";
  const auto runs = sync_until_done_under_chaos(killed, "kafka", chaos_env, /*seed_base=*/6100, {.min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  std::cout << "kafka topics chaos: " << runs.summary() << "\n";
  EXPECT_GE(runs.kills, 15);

  for (int t = 0; t < kTopics; ++t) {
    const std::string table = fmt::format("k_shop_t{}", t);
    const std::string digest = fmt::format(
        "SELECT count(*) || '|' || count(DISTINCT (\"partition\", \"offset\")) || '|' || count(DISTINCT id) || '|' || "
        "sum(hash(id, f{0}, n, \"partition\", \"offset\", topic)) FROM {1}",
        t, table);
    const std::string want = duckdb_value(clean.path("out.duckdb"), digest);
    EXPECT_TRUE(want.starts_with(fmt::format("{0}|{0}|{0}|", kPerTopic))) << table << ": " << want;
    EXPECT_EQ(duckdb_value(killed.path("out.duckdb"), digest), want) << table;
    // Only its own topic's field.
    EXPECT_EQ(duckdb_value(killed.path("out.duckdb"),
                           fmt::format("SELECT count(*) FROM information_schema.columns WHERE table_name = '{}' AND "
                                       "column_name LIKE 'f%'",
                                       table)),
              "1");
  }
}

}  // namespace
}  // namespace skippr::test
