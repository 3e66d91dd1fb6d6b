// The GoogleAnalytics source through the GA4 emulator (tests/support/ga4_emulator.h), into DuckDB with its default
// landing (replace_partition on date): syncs a "day" apart while the emulator revises the last days' figures, with
// and without kills; throttling, lost answers and a day's quota used up; the mistakes a user makes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <thread>

#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/fault_proxy.h"
#include "support/ga4_emulator.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

// No landing: the source's default applies. Days of 18 rows, read 7 rows a request, a batch each: a day
// spans pages and batches.
std::string ga4_config(const Ga4Emulator& ga4, const std::string& endpoint, const std::string& extra = "") {
  return fmt::format(R"(data_sources:
  ga:
    {}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: ga_daily }}
pipelines:
  ga:
    data_source: data_sources.ga
    data_sink: data_sinks.db
)",
                     ga4_source(ga4, endpoint,
                                ", start_date: \"2026-11-01\", end_date: \"${GA_END}\", page_size: 7, timeout_seconds: "
                                "5" +
                                    extra));
}

std::map<std::string, std::string> day_env(const std::string& end_date) {
  return {{"GA_END", end_date}, {"BUFFER_THRESHOLD_BYTES", "500"}, {"LANDING_GROUP_BATCHES", "1"}};
}

// The table against what GA4 holds now for from..to: the same rows, each once, the same figures.
void expect_table_is_truth(const PipelineFixture& f, const Ga4Emulator& ga4, const std::string& from,
                           const std::string& to) {
  const auto rows = duckdb_rows(f.path("out.duckdb"),
                                "SELECT CAST(date AS VARCHAR), country, deviceCategory, sessions, engagementRate, "
                                "purchaseRevenue, averageSessionDuration FROM ga_daily ORDER BY 1, 2, 3");
  const auto truth = ga4.truth(from, to);
  ASSERT_EQ(rows.size(), truth.size());
  for (size_t i = 0; i < truth.size(); ++i) {
    const auto& t = truth[i];
    const auto& r = rows[i];
    SCOPED_TRACE(fmt::format("{} {} {}", t.date, t.country, t.device));
    EXPECT_EQ(r[0], t.date);
    EXPECT_EQ(r[1], t.country);
    EXPECT_EQ(r[2], t.device);
    EXPECT_EQ(r[3], std::to_string(t.sessions));
    EXPECT_NEAR(std::stod(r[4]), t.engagement_rate, 1e-9);
    EXPECT_NEAR(std::stod(r[5]), t.purchase_revenue, 1e-9);
    EXPECT_NEAR(std::stod(r[6]), t.average_session_duration, 1e-9);
  }
}

// The dates the reports since call `first` asked for (each report is one day).
std::set<std::string> days_asked(const Ga4Emulator& ga4, size_t first) {
  std::set<std::string> days;
  const auto calls = ga4.calls();
  for (size_t i = first; i < calls.size(); ++i) {
    const auto body = nlohmann::json::parse(calls[i].body);
    days.insert(body["dateRanges"][0]["startDate"].get<std::string>());
  }
  return days;
}

ProcessResult sync(const PipelineFixture& f, const std::string& end_date) {
  return f.skipprd({"sync", "--pipeline", "ga", "--once", "--output", "text"}, day_env(end_date));
}

TEST(GoogleAnalytics, ThreeSyncsADayApartEqualWhatGa4HoldsForEveryDate) {
  Ga4Emulator ga4;
  PipelineFixture f(ga4_config(ga4, ga4.endpoint()));
  ga4.set_today("2026-11-11");
  auto first = sync(f, "2026-11-10");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  expect_table_is_truth(f, ga4, "2026-11-01", "2026-11-10");
  const auto sessions_read_first =
      duckdb_value(f.path("out.duckdb"), "SELECT sum(sessions) FROM ga_daily WHERE date = '2026-11-10'");
  const auto types = duckdb_rows(f.path("out.duckdb"),
                                 "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = "
                                 "'ga_daily' ORDER BY ordinal_position");
  EXPECT_EQ(types, (std::vector<std::vector<std::string>>{{"date", "DATE"},
                                                          {"country", "VARCHAR"},
                                                          {"deviceCategory", "VARCHAR"},
                                                          {"sessions", "BIGINT"},
                                                          {"engagementRate", "DOUBLE"},
                                                          {"purchaseRevenue", "DOUBLE"},
                                                          {"averageSessionDuration", "DOUBLE"},
                                                          {"_skippr_sync", "VARCHAR"}}));

  // A day later GA4 has revised the last days and has one more: the sync reads the 3 days before the last it read,
  // and the new one, nothing older.
  ga4.set_today("2026-11-12");
  size_t calls_before = ga4.calls().size();
  auto second = sync(f, "2026-11-11");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(days_asked(ga4, calls_before),
            (std::set<std::string>{"2026-11-08", "2026-11-09", "2026-11-10", "2026-11-11"}));
  expect_table_is_truth(f, ga4, "2026-11-01", "2026-11-11");

  ga4.set_today("2026-11-13");
  calls_before = ga4.calls().size();
  auto third = sync(f, "2026-11-12");
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(days_asked(ga4, calls_before),
            (std::set<std::string>{"2026-11-09", "2026-11-10", "2026-11-11", "2026-11-12"}));
  expect_table_is_truth(f, ga4, "2026-11-01", "2026-11-12");
  // The figures did change: appending them would have counted 11-10 three times, skipping them kept the first read.
  EXPECT_NE(duckdb_value(f.path("out.duckdb"), "SELECT sum(sessions) FROM ga_daily WHERE date = '2026-11-10'"),
            sessions_read_first);
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) FROM ga_daily WHERE date = '2026-11-10'"), "18");
}

TEST(GoogleAnalytics, SyncsUnderKillsEqualWhatGa4HoldsAndAnUnkilledRun) {
  Ga4Emulator ga4;
  PipelineFixture killed(ga4_config(ga4, ga4.endpoint()));
  PipelineFixture calm(ga4_config(ga4, ga4.endpoint()));
  const std::vector<std::pair<std::string, std::string>> days = {
      {"2026-11-11", "2026-11-10"}, {"2026-11-12", "2026-11-11"}, {"2026-11-13", "2026-11-12"}};
  int seed = 500;
  for (const auto& [today, end] : days) {
    SCOPED_TRACE(today);
    ga4.set_today(today);
    ChaosOptions options;
    options.min_kills = 6;
    options.lose_data_dir_every = 3;
    options.each_failpoint_in_turn = true;
    const ChaosRuns runs = sync_until_done_under_chaos(killed, "ga", day_env(end), seed, options);
    seed += 100;
    ASSERT_TRUE(runs.finished) << runs.failure << " " << runs.summary();
    EXPECT_GE(runs.kills, 6) << runs.summary();
    expect_table_is_truth(killed, ga4, "2026-11-01", end);
    auto r = sync(calm, end);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string content =
      "SELECT count(*), count(DISTINCT (date, country, deviceCategory)), sum(hash(date, country, deviceCategory, "
      "sessions, engagementRate, purchaseRevenue, averageSessionDuration)::HUGEINT) FROM ga_daily";
  EXPECT_EQ(duckdb_rows(killed.path("out.duckdb"), content), duckdb_rows(calm.path("out.duckdb"), content));
}

TEST(GoogleAnalytics, ThrottlingAndLostAnswersAreWaitedOutAndADaysQuotaExitsRetryLater) {
  Ga4Emulator ga4;
  ga4.set_today("2026-11-11");
  FaultProxy proxy(ga4.endpoint());
  PipelineFixture f(ga4_config(ga4, proxy.endpoint()));

  // Two throttled reports and two answers lost after GA4 answered them: waited out, same content.
  ga4.throttle_next(2);
  FaultRule lost;
  lost.path_regex = ":runReport";
  lost.action = "drop_after_forward";
  lost.skip = 5;
  lost.times = 2;
  const int rule = proxy.add(lost);
  auto r = sync(f, "2026-11-06");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(proxy.hits(rule), 2);
  int throttled = 0;
  for (const auto& call : ga4.calls()) throttled += call.status == 429;
  EXPECT_EQ(throttled, 2);
  EXPECT_NE(r.err.find("runReport answered HTTP 429; asking again"), std::string::npos) << r.err;
  expect_table_is_truth(f, ga4, "2026-11-01", "2026-11-06");

  // The property's tokens for the day run out mid-sync: exit 75 saying when to run again; what was read is kept.
  const int64_t spent = static_cast<int64_t>(ga4.calls().size()) * Ga4Emulator::kTokensPerReport;
  ga4.set_daily_tokens(spent + 8 * Ga4Emulator::kTokensPerReport);
  auto out_of_quota = sync(f, "2026-11-10");
  EXPECT_EQ(out_of_quota.exit_code, 75) << out_of_quota.err;
  EXPECT_NE(out_of_quota.err.find("has used its API tokens for the day"), std::string::npos) << out_of_quota.err;
  EXPECT_NE(out_of_quota.err.find("run again after midnight Pacific time"), std::string::npos) << out_of_quota.err;
  // The quota renewed, the sync goes on from where it stopped and the table holds every day once.
  ga4.set_daily_tokens(200000);
  auto again = sync(f, "2026-11-10");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  expect_table_is_truth(f, ga4, "2026-11-01", "2026-11-10");
}

TEST(GoogleAnalytics, WhatTheApiRefusesStopsTheRunWithItsSentenceBeforeAnythingIsWritten) {
  Ga4Emulator ga4;
  struct Case {
    std::string extra_yaml;
    std::string expected;
  };
  const std::string key = ga4.credentials_file().string();
  const std::string stranger = ga4.stranger_credentials_file().string();
  const std::vector<Case> cases = {
      {"", "Field bogusMetric is not a valid metric"},
      {"property", "User does not have sufficient permissions for this property"},
      {"stranger", "the service-account key is refused"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expected);
    std::string yaml = ga4_config(ga4, ga4.endpoint());
    if (c.extra_yaml.empty()) yaml.replace(yaml.find("metrics: [sessions"), 18, "metrics: [bogusMetric");
    if (c.extra_yaml == "property") yaml.replace(yaml.find(Ga4Emulator::kProperty), 9, "999999999");
    if (c.extra_yaml == "stranger") yaml.replace(yaml.find(key), key.size(), stranger);
    PipelineFixture f(yaml);
    auto r = sync(f, "2026-11-10");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("PRIVATE KEY"), std::string::npos);
    EXPECT_EQ(r.err.find("ya29."), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
  }
  // And the config's own mistakes, at load time.
  PipelineFixture bad(ga4_config(ga4, ga4.endpoint(), ", lookback_days: -1"));
  auto r = bad.skipprd({"validate"}, day_env("2026-11-10"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE((r.out + r.err).find("lookback_days must be 0 or more"), std::string::npos) << r.out << r.err;
}

// Without --once the source is read again every SYNC_FREQUENCY seconds, each time a sync of its own.
TEST(GoogleAnalytics, WithoutOnceEachPollIsANewSync) {
  Ga4Emulator ga4;
  ga4.set_today("2026-11-11");
  PipelineFixture f(ga4_config(ga4, ga4.endpoint()));
  auto env = day_env("2026-11-10");
  env["SYNC_FREQUENCY"] = "2";
  env["DATA_DIR"] = f.path("data").string();
  env["SKIPPR_CONFIG_FILE"] = "";
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "ga"}, f.root(), env);
  // The first sync asks for 10 days (3 pages each) after its probe, each later one for the 3 days it reads again. Stopped once two more
  // syncs have asked theirs, while it waits for the next (no report for half a second), so no sync is cut short.
  const size_t first_sync = 1 + 10 * 3, later_sync = 3 * 3;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  size_t seen = 0;
  auto quiet_since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    const size_t calls = ga4.calls().size();
    if (calls != seen) {
      seen = calls;
      quiet_since = std::chrono::steady_clock::now();
    } else if (calls >= first_sync + 2 * later_sync &&
               std::chrono::steady_clock::now() - quiet_since > std::chrono::milliseconds(500)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ((seen - first_sync) % later_sync, 0u) << seen << " reports: stopped mid-sync?";
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_process(pid), 0);
  expect_table_is_truth(f, ga4, "2026-11-01", "2026-11-10");
  EXPECT_GE(std::stoi(duckdb_value(f.path("out.duckdb"), "SELECT count(DISTINCT _skippr_sync) FROM ga_daily")), 2);
}

}  // namespace
}  // namespace skippr::test
