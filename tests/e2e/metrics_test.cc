// /metrics on SKIPPR_METRICS_ADDRESS through the real binary: scraped while a sync runs, every answer passes
// Prometheus' own checker (`promtool check metrics`, Debian's prometheus package), counters never go down between
// scrapes, and at the end they equal SHOW STATS; the latency histograms count every commit and landing. A malformed
// address stops the sync before anything is read (exit 2); so does a port another process holds, with "retry later"
// (exit 75), since that is usually over soon (the previous instance still stopping).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "clients/http/http_request.h"
#include "support/pipeline_fixture.h"
#include "support/prometheus_text.h"

namespace skippr::test {
namespace {

constexpr uint64_t kRows = 400000;

std::string sample_config() {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 8 }}
data_sinks:
  warehouse:
    DuckDB: {{ path: out.duckdb, table: trips }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
)",
                     kRows);
}

TEST(Metrics, ScrapesDuringASyncParseAndEndEqualToShowStats) {
  PipelineFixture f(sample_config());
  const int port = free_loopback_port();
  const std::string url = fmt::format("http://127.0.0.1:{}/metrics", port);
  std::map<std::string, std::string> env = {{"SKIPPR_METRICS_ADDRESS", fmt::format("127.0.0.1:{}", port)},
                                            {"BUFFER_THRESHOLD_BYTES", "256KiB"},
                                            {"DATA_DIR", f.path("data").string()},
                                            {"SKIPPR_CONFIG_FILE", ""}};
  // Without --once: the sync keeps serving /metrics after the sample is read, until it is stopped.
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire"}, f.root(), env);
  const std::string landed = R"(skippr_rows_landed_total{pipeline="bikehire"})";
  std::map<std::string, double> last;
  int scrapes = 0, during = 0, waiting_seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    HttpRequest scrape;
    scrape.url = url;
    auto got = http_send(scrape);
    if (!got || got->status != 200) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    EXPECT_EQ(got->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    const std::string problems = promtool_problems(f.path(fmt::format("scrape-{}.txt", scrapes)), got->body);
    EXPECT_EQ(problems, "") << got->body;
    auto now = prometheus_samples(got->body);
    for (const auto& [name, value] : last) {
      if (name.find("_total{") != std::string::npos || name.find("_count{") != std::string::npos) {
        EXPECT_GE(now[name], value) << name << " went down between scrapes";
      }
    }
    // One snapshot: what is committed and not landed yet is what waits (a fresh run has no earlier batches).
    const std::string label = R"({pipeline="bikehire"})";
    if (now.count("skippr_batches_waiting" + label)) {
      EXPECT_EQ(now["skippr_batches_waiting" + label],
                now["skippr_batches_committed_total" + label] - now["skippr_batches_landed_total" + label]);
      if (now["skippr_batches_waiting" + label] > 0) ++waiting_seen;
    }
    last = now;
    ++scrapes;
    if (now.count(landed) && now[landed] > 0 && now[landed] < kRows) ++during;
    if (now.count(landed) && now[landed] == kRows) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  kill(pid, SIGTERM);
  wait_process(pid);
  ASSERT_EQ(last[landed], kRows) << "the sync did not land every row within 2 minutes";
  EXPECT_GE(during, 1) << "no scrape caught the sync mid-way";
  EXPECT_GT(waiting_seen, 0) << "the backlog gauge never showed a batch waiting";
  std::cout << "metrics: " << scrapes << " scrapes, " << during << " mid-way, " << waiting_seen
            << " with batches waiting\n";

  auto stats = f.skipprd({"query", "--sql", "SHOW STATS FOR bikehire", "--output", "json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  std::map<std::string, std::string> shown;
  std::istringstream rows(stats.out);
  for (std::string line; std::getline(rows, line);) {
    if (line.empty()) continue;
    const auto row = nlohmann::json::parse(line);
    shown[row.at("stat").get<std::string>()] = row.at("value").get<std::string>();
  }
  for (const char* counter : {"rows_read", "rows_committed", "rows_landed", "batches_committed", "batches_landed",
                              "batches_replayed", "already_applied", "dead_letters", "rows_rejected"}) {
    const std::string name = fmt::format("skippr_{}_total{{pipeline=\"bikehire\"}}", counter);
    ASSERT_TRUE(last.count(name)) << name;
    EXPECT_EQ(fmt::format("{}", static_cast<uint64_t>(last[name])), shown[counter]) << counter;
  }
  EXPECT_GT(std::stoi(shown["batches_committed"]), 5);
  EXPECT_EQ(last[R"(skippr_wal_commit_seconds_count{pipeline="bikehire"})"], std::stod(shown["batches_committed"]));
  EXPECT_EQ(last[R"(skippr_sink_attempts_total{pipeline="bikehire",outcome="applied"})"],
            std::stod(shown["batches_landed"]));
  EXPECT_EQ(last[R"(skippr_batches_waiting{pipeline="bikehire"})"], 0);
  EXPECT_TRUE(last.count(R"(skippr_seconds_since_last_landed_batch{pipeline="bikehire"})"));
}

// ":port", as Prometheus' exporters take it: every interface, so loopback too.
TEST(Metrics, AnAddressWithoutAHostListensOnEveryInterface) {
  PipelineFixture f(sample_config());
  const int port = free_loopback_port();
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire"}, f.root(),
                                {{"SKIPPR_METRICS_ADDRESS", fmt::format(":{}", port)},
                                 {"DATA_DIR", f.path("data").string()},
                                 {"SKIPPR_CONFIG_FILE", ""}});
  bool scraped = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       !scraped && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
    HttpRequest scrape;
    scrape.url = fmt::format("http://127.0.0.1:{}/metrics", port);
    auto got = http_send(scrape);
    scraped = got && got->status == 200 && got->body.find("skippr_rows_landed_total") != std::string::npos;
  }
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_process(pid), 0);
  EXPECT_TRUE(scraped) << read_text(f.root() / "spawned.err");
}

TEST(Metrics, AMalformedOrTakenAddressStopsBeforeAnythingIsRead) {
  PipelineFixture f(sample_config());
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SKIPPR_METRICS_ADDRESS", "localhost"}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("SKIPPR_METRICS_ADDRESS='localhost' is not an address"), std::string::npos) << r.err;

  // The port is taken by another listener: exit 75 (retry later) naming the address, nothing committed.
  const int port = free_loopback_port();
  {
    PortHolder holder(port, f.root());
    r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"},
                  {{"SKIPPR_METRICS_ADDRESS", fmt::format("127.0.0.1:{}", port)}});
  }
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find(fmt::format("SKIPPR_METRICS_ADDRESS=127.0.0.1:{}: cannot listen on 127.0.0.1:{}: another "
                                   "process is listening there",
                                   port, port)),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb"))) << "the sync wrote before it stopped";
}

}  // namespace
}  // namespace skippr::test
