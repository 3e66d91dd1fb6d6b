// The AMQP sink against a real RabbitMQ broker: persistent messages with ids from the BatchId, one per row or per
// batch, config mistakes (login, vhost, exchange, an unroutable key) stopping with exit 2, a broker that is not there
// with 75, and a SIGKILL loop into a quorum queue where every repeat carries an id seen before.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"
#include "support/rabbitmq_server.h"
#include "support/stream_files.h"

namespace skippr::test {
namespace {

std::string sample_to_amqp(uint64_t rows, const std::string& sink_params) {
  return sample_to_sink_config(fmt::format("AMQP: {{ {} }}", sink_params), rows, 3);
}

std::string to_queue(const std::string& queue, const std::string& extra = "") {
  return fmt::format(R"(url: "{}", routing_key: {}, declare: {{ queue: {}, queue_type: quorum }}{})",
                     SharedRabbitMq().url(), queue, queue, extra);
}

TEST(AmqpSink, OneMessagePerRowWithItsId) {
  PipelineFixture f(sample_to_amqp(5000, to_queue("rows")));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "128KiB"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto messages = SharedRabbitMq().drain("rows");
  ASSERT_EQ(messages.size(), 5000u);
  std::set<std::string> ids, batches;
  std::set<int64_t> trips;
  for (const auto& m : messages) {
    ids.insert(m.message_id);
    batches.insert(m.batch_id_header);
    EXPECT_TRUE(m.message_id.starts_with(m.batch_id_header + "/")) << m.message_id;
    trips.insert(nlohmann::json::parse(m.body).at("trip_id").get<int64_t>());
  }
  EXPECT_EQ(ids.size(), 5000u);
  EXPECT_EQ(trips.size(), 5000u);
  EXPECT_GT(batches.size(), 1u);
}

TEST(AmqpSink, OneMessagePerBatch) {
  PipelineFixture f(sample_to_amqp(5000, to_queue("batches", ", message_per: batch, format: jsonl")));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "128KiB"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto messages = SharedRabbitMq().drain("batches");
  ASSERT_GT(messages.size(), 1u);
  size_t lines = 0;
  for (const auto& m : messages) {
    EXPECT_EQ(m.message_id, m.batch_id_header);
    lines += std::count(m.body.begin(), m.body.end(), '\n');
  }
  EXPECT_EQ(lines, 5000u);
}

// amqps:// with the broker's CA: the messages arrive over TLS; without it the broker's certificate is not trusted,
// which is a setup mistake (exit 2), not something a retry mends.
TEST(AmqpSink, AmqpsVerifiesTheBrokerAgainstTheGivenCa) {
  auto& mq = SharedRabbitMq();
  const std::string queue = fmt::format("url: \"{}\", routing_key: tls, declare: {{ queue: tls }}", mq.tls_url());
  PipelineFixture f(sample_to_amqp(300, fmt::format("{}, ca_file: \"{}\"", queue, mq.ca_file().string())));
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto messages = mq.drain("tls");
  std::set<std::string> ids;
  for (const auto& m : messages) ids.insert(m.message_id);
  EXPECT_EQ(messages.size(), 300u);
  EXPECT_EQ(ids.size(), 300u);

  PipelineFixture untrusted(sample_to_amqp(10, queue));
  auto refused = untrusted.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SINK_RETRY_SECONDS", "2"}});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("certificate"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("guest:guest"), std::string::npos) << refused.err;
}

// A mistake a person fixes (credentials, vhost, exchange, a routing key no queue is bound to) is exit 2, also when
// the batch already waits in the WAL; a broker that does not answer is 75.
TEST(AmqpSink, MistakesStopWithExitTwoOrSeventyFive) {
  auto& mq = SharedRabbitMq();
  struct Case {
    std::string params, expect;
    int exit_code;
  };
  const std::string wrong_password = fmt::format("amqp://guest:n0t-the-pw@127.0.0.1:{}/", mq.port());
  const std::vector<Case> cases = {
      {fmt::format(R"(url: "{}", routing_key: x)", wrong_password), "check the url's user, password and vhost", 2},
      {fmt::format(R"(url: "{}", routing_key: x)", mq.url("no-such-vhost")), "vhost", 2},
      {fmt::format(R"(url: "{}", exchange: no_such_exchange, routing_key: x)", mq.url()),
       "exchange 'no_such_exchange' does not exist", 2},
      {fmt::format(R"(url: "{}", exchange: amq.direct, routing_key: nobody_bound)", mq.url()), "unroutable", 2},
      {fmt::format(R"(url: "amqp://guest:guest@127.0.0.1:{}/", routing_key: x)", free_loopback_port()),
       "cannot connect", 75},
  };
  for (const auto& c : cases) {
    PipelineFixture f(sample_to_amqp(10, c.params));
    auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SINK_RETRY_SECONDS", "2"}});
    EXPECT_EQ(run.exit_code, c.exit_code) << c.params << "\n" << run.err;
    EXPECT_NE(run.err.find(c.expect), std::string::npos) << c.params << "\n" << run.err;
    EXPECT_EQ(run.err.find("n0t-the-pw"), std::string::npos) << run.err;
    EXPECT_TRUE(files_containing(f.path("data"), "n0t-the-pw").empty());  // the config itself holds it
  }
}

std::string streams_to_amqp(const std::string& queue) {
  return jsonl_files_to_sink_config(
      "in/{stream}/*.jsonl",
      fmt::format(
          R"(AMQP: {{ url: "{}", exchange: amq.topic, routing_key: "raw.{{stream}}", declare: {{ queue: {} }} }})",
          SharedRabbitMq().url(), queue));
}

// Per stream: each distinct message id's body (a consumer that drops an id it has seen keeps these).
std::map<std::string, std::map<std::string, std::string>> by_stream(const std::vector<ReceivedMessage>& messages) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& m : messages) {
    EXPECT_EQ(m.routing_key, "raw." + m.stream_header) << m.message_id;
    EXPECT_TRUE(m.message_id.starts_with(m.batch_id_header + "/" + m.stream_header + "/")) << m.message_id;
    auto [at, added] = out[m.stream_header].emplace(m.message_id, m.body);
    if (!added) {
      EXPECT_EQ(at->second, m.body) << "one id, two bodies: " << m.message_id;
    }
  }
  return out;
}

// Five stream folders to a topic exchange under raw.<stream>, the declared queue bound to each stream's key as the
// stream appears; under kill -9 every stream's messages, with repeats dropped by id, are the unkilled run's.
TEST(AmqpSink, EachStreamUnderItsOwnRoutingKeyEqualsAnUnkilledRunUnderKills) {
  auto& mq = SharedRabbitMq();
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "64KiB"}};
  PipelineFixture calm(streams_to_amqp("streams_calm"));
  const auto written = write_stream_files(calm.root(), 6, 1500);
  auto clean = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const auto want = by_stream(mq.drain("streams_calm"));

  PipelineFixture f(streams_to_amqp("streams_killed"));
  write_stream_files(f.root(), 6, 1500);
  auto chaos = env;
  chaos["SKIPPR_CHAOS_MIN_SECONDS"] = "0.05";
  chaos["SKIPPR_CHAOS_MAX_SECONDS"] = "0.4";
  const ChaosRuns runs = sync_until_done_under_chaos(f, "bikehire", chaos, 5100, {.min_kills = 10});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 10) << runs.summary();
  const auto got = by_stream(mq.drain("streams_killed"));
  ASSERT_EQ(want.size(), stream_names().size());
  for (const auto& stream : stream_names()) {
    ASSERT_TRUE(want.contains(stream) && got.contains(stream)) << stream;
    EXPECT_EQ(want.at(stream).size(), written.at(stream)) << stream;
    std::multiset<std::string> want_bodies, got_bodies;
    for (const auto& [id, body] : want.at(stream)) want_bodies.insert(body);
    for (const auto& [id, body] : got.at(stream)) got_bodies.insert(body);
    EXPECT_EQ(got_bodies, want_bodies) << stream;
  }
  std::printf("[ metrics  ] AMQP streams: %s\n", runs.summary().c_str());

  // {stream} in the routing key of a source of one stream is a setup mistake.
  PipelineFixture one(sample_to_amqp(10, R"(url: "amqp://guest:guest@127.0.0.1:1/", routing_key: "raw.{stream}")"));
  auto refused = one.skipprd({"validate"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("names one stream"), std::string::npos) << refused.err;
}

TEST(AmqpSink, KillLoopIntoAQuorumQueueRepeatsOnlyKnownIds) {
  auto& mq = SharedRabbitMq();
  constexpr uint64_t kRows = 200000;
  std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "128KiB"}, {"WAL_BYTES_PER_FILE", "1000000"}};
  PipelineFixture unkilled(sample_to_amqp(kRows, to_queue("unkilled")));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  std::multiset<std::string> expected;
  for (auto& m : mq.drain("unkilled")) expected.insert(m.body);
  ASSERT_EQ(expected.size(), kRows);

  PipelineFixture f(sample_to_amqp(kRows, to_queue("killed")));
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.05";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.5";
  const ChaosRuns runs = sync_until_done_under_chaos(f, "bikehire", env, 2600, {.min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 15) << runs.summary();

  // A consumer that drops an id it has seen gets exactly the unkilled run's content; every row it drops was a
  // repeat of the same row (same trip) under the same id, never a row read twice from the source.
  const auto messages = mq.drain("killed");
  std::map<std::string, std::string> first_body_by_id;
  std::map<int64_t, std::string> id_by_trip;
  std::multiset<std::string> deduplicated;
  size_t repeats = 0;
  for (const auto& m : messages) {
    const int64_t trip = nlohmann::json::parse(m.body).at("trip_id").get<int64_t>();
    auto [it, inserted] = id_by_trip.emplace(trip, m.message_id);
    EXPECT_EQ(it->second, m.message_id) << "trip " << trip << " arrived under two ids";
    auto [seen, is_new] = first_body_by_id.emplace(m.message_id, m.body);
    if (is_new) {
      deduplicated.insert(m.body);
    } else {
      ++repeats;
      EXPECT_EQ(seen->second, m.body) << m.message_id;
    }
  }
  EXPECT_EQ(id_by_trip.size(), kRows);
  EXPECT_EQ(deduplicated, expected);
  std::printf("[ metrics  ] rows=%llu messages=%zu repeats=%zu %s\n", static_cast<unsigned long long>(kRows),
              messages.size(), repeats, runs.summary().c_str());
}

}  // namespace
}  // namespace skippr::test
