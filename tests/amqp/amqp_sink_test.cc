// The AMQP sink against a real RabbitMQ broker: persistent messages with ids from the BatchId, one per row or per
// batch, config mistakes (login, vhost, exchange, an unroutable key) stopping with exit 2, a broker that is not there
// with 75, a SIGKILL loop into a quorum queue where every repeat carries an id seen before, and the sink suite read
// through a consumer that drops repeated ids.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"
#include "support/rabbitmq_server.h"
#include "support/sink_suite.h"
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

// The sink suite (tests/support/sink_suite.h) on AMQP. Each scenario's place is a routing key on amq.topic with a queue
// of its own that the sink declares and binds (for a {stream} pattern, one queue bound to each stream's key). What it
// holds is what a consumer that drops repeated ids keeps: every message drained so far, once per id (one id with two
// bodies fails the test), each row the message's JSON body with its fields as text.
std::string queue_of(const std::string& pattern) {
  std::string queue = pattern;
  if (const auto at = queue.find("{stream}"); at != std::string::npos) queue.replace(at, 8, "_streams_");
  return queue;
}

const SinkUnderTest& amqp_under_test() {
  static std::set<std::string> patterns;                                      // every place sink() was given
  static std::map<std::string, std::map<std::string, ReceivedMessage>> kept;  // queue -> message id -> message
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "AMQP";
    s.sink = [](const std::string& where) {
      patterns.insert(where);
      return fmt::format(R"(AMQP: {{ url: "{}", exchange: amq.topic, routing_key: "{}", message_per: row, )"
                         "declare: {{ queue: {} }} }}",
                         SharedRabbitMq().url(), where, queue_of(where));
    };
    s.rows = [](const PipelineFixture&, const std::string& where, const std::vector<std::string>& columns) {
      std::vector<std::string> out;
      for (const auto& pattern : patterns) {
        const auto at = pattern.find("{stream}");
        const std::string before = pattern.substr(0, at);
        if (at == std::string::npos ? pattern != where : !where.starts_with(before)) continue;
        auto& messages = kept[queue_of(pattern)];
        for (auto& m : SharedRabbitMq().drain(queue_of(pattern))) {
          auto [seen, added] = messages.emplace(m.message_id, m);
          if (!added) {
            EXPECT_EQ(seen->second.body, m.body) << "one id, two bodies: " << m.message_id;
          }
        }
        for (const auto& [id, m] : messages) {
          // A stream's place is the pattern with the stream's name made plain (sink_suite.cc's stream_place); its
          // messages go under the pattern's key with the name as it is, each id naming its batch and stream.
          if (at != std::string::npos && stream_table(before, m.stream_header) != where) continue;
          if (at != std::string::npos) {
            EXPECT_EQ(m.routing_key, before + m.stream_header + pattern.substr(at + 8)) << id;
            EXPECT_TRUE(id.starts_with(m.batch_id_header + "/" + m.stream_header + "/")) << id;
          }
          const auto body = nlohmann::json::parse(m.body, nullptr, false);
          std::vector<std::string> values;
          for (const auto& column : columns) {
            const auto value = body.is_object() ? body.value(column, nlohmann::json()) : nlohmann::json();
            values.push_back(value.is_null() ? "NULL" : value.is_string() ? value.get<std::string>() : value.dump());
          }
          out.push_back(fmt::format("{}", fmt::join(values, "|")));
        }
      }
      return out;
    };
    s.lands_streams = true;
    s.at_least_once = true;
    // {stream} in the routing key of a source of one stream.
    s.mistakes = {
        {R"(AMQP: { url: "amqp://guest:guest@127.0.0.1:1/", routing_key: "raw.{stream}" })", "names one stream", ""}};
    s.keeps_stream_names = true;
    s.kill_loop_rows = 50000;
    s.chaos_min_seconds = 0.05;
    s.chaos_max_seconds = 0.5;
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(AMQP, amqp_under_test());

}  // namespace skippr::test
