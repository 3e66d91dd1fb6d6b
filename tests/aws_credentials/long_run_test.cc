// A sync that runs for minutes on temporary credentials, as on ECS/EKS: the container endpoint (the gate's) hands out
// keys that live 60 seconds. Objects keep arriving in an S3 inbox; the File source reads them, the S3 sink lands
// them, the WAL is in S3 and the state in DynamoDB — every client on the same credentials. Half-way the keys are
// expired early (revoked, or AWS's clock ahead). The run never stops, the gate refuses nothing but those few
// expired requests, and every row lands once.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "support/duckdb_probe.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kCredentialSeconds = 60;
constexpr auto kRunFor = 200s;  // more than three lifetimes of the keys
constexpr auto kBetweenObjects = 4s;
constexpr int kRowsPerObject = 40;

bool still_running(int pid, int& status) { return waitpid(pid, &status, WNOHANG) == 0; }

TEST(TemporaryCredentials, ASyncOnSixtySecondKeysRunsForMinutesAndLandsEveryArrivingRowOnce) {
  MotoServer moto(kCredentialSeconds);
  const std::string inbox = moto.create_bucket("inbox"), out = moto.create_bucket("out");
  PipelineFixture f(fmt::format(R"(data_sources:
  inbox:
    File: {{ path: "s3://{}/in/*.jsonl" }}
data_sinks:
  lake:
    S3: {{ bucket: {}, prefix: rows, format: jsonl }}
pipelines:
  arriving:
    data_source: data_sources.inbox
    data_sink: data_sinks.lake
)",
                                inbox, out));
  auto env = moto.container_credentials_env();
  env["WAL_STORAGE"] = "s3";
  env["SKIPPR_WAL_S3_BUCKET"] = moto.create_bucket("wal");
  env["SKIPPR_STATE_STORE"] = "dynamodb";
  env["SKIPPR_STATE_DYNAMODB_TABLE"] = "skippr-state-credentials";
  env["SYNC_FREQUENCY"] = "1";
  env["DATA_DIR"] = f.path("data").string();
  env["SKIPPR_CONFIG_FILE"] = f.path("skippr.yml").string();
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "arriving", "--output", "text"}, f.root(), env);

  int objects = 0, status = 0;
  bool expired_early = false;
  const auto start = Clock::now();
  while (Clock::now() - start < kRunFor) {
    TempDir batch;
    std::string lines;
    for (int i = 0; i < kRowsPerObject; ++i) lines += fmt::format("{{\"id\":{}}}\n", objects * kRowsPerObject + i);
    write_text(batch / fmt::format("{:05}.jsonl", objects), lines);
    moto.upload(batch.path(), inbox, "in/");  // the test's own uploads use the permanent key
    ++objects;
    if (!expired_early && Clock::now() - start > kRunFor / 2) {
      EXPECT_GE(moto.expire_temporary_keys(), 1);
      expired_early = true;
    }
    ASSERT_TRUE(still_running(pid, status)) << "the sync stopped after " << objects << " objects, status " << status
                                            << ": " << read_text(f.root() / "spawned.err");
    std::this_thread::sleep_for(kBetweenObjects);
  }

  // Then every row arrives within a minute, and the run is still going.
  const int want = objects * kRowsPerObject;
  std::string got;
  TempDir landed;
  for (auto until = Clock::now() + 60s; Clock::now() < until; std::this_thread::sleep_for(2s)) {
    std::filesystem::remove_all(landed / "rows");
    if (!moto.keys(out, "rows/").empty()) moto.download(out, "rows/", landed / "rows");
    got = duckdb_memory_value(fmt::format(
        "SELECT count(*) || ' ' || count(DISTINCT id) FROM read_json('{}/**/*.jsonl', format='newline_delimited')",
        (landed / "rows").string()));
    if (got == fmt::format("{} {}", want, want)) break;
  }
  ASSERT_TRUE(still_running(pid, status)) << read_text(f.root() / "spawned.err");
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_process(pid), 0) << read_text(f.root() / "spawned.err");
  EXPECT_EQ(got, fmt::format("{} {}", want, want)) << "rows, distinct ids";

  const auto stats = moto.gate_stats();
  std::printf("[ metrics  ] objects=%d rows=%d credentials issued=%d accepted=%d refused=%s\n", objects, want,
              stats.at("credentials_issued").get<int>(), stats.at("accepted").get<int>(),
              stats.at("refused").dump().c_str());
  EXPECT_GE(stats.at("credentials_issued").get<int>(), 4) << "renewed ahead of every expiry";
  // Only the requests in flight when the keys were expired early are refused, once each: every client renews.
  for (const auto& [code, count] : stats.at("refused").items()) {
    EXPECT_EQ(code, "ExpiredToken") << stats.dump(2);
    EXPECT_LE(count.get<int>(), 8) << stats.dump(2);
  }
}

}  // namespace
}  // namespace skippr::test
