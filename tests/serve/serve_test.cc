// `skipprd serve` through the real binary: three pipelines in one process, one of them pointing at a destination
// nobody listens on. The other two land every row; the status page, loaded in headless Chromium (Debian's chromium),
// shows all three with the dead one retrying and its error, with their charts; screenshots (desktop and phone width)
// are kept in <build>/test-artifacts. Actions need the token; a disabled pipeline stops and starts again when enabled;
// a slow action holds no server thread. /metrics carries every pipeline's state. A taken --listen port is exit 75.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "clients/http/http_request.h"
#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"
#include "support/prometheus_text.h"

namespace skippr::test {
namespace {

namespace fs = std::filesystem;

// Two healthy pipelines (alpha: 20,000 rows into a.duckdb, beta: 50,000 into b.duckdb) and a third, `third`, from
// alpha's source into the sink `third_sink` (one YAML flow line).
std::string serve_config(const std::string& third, const std::string& third_sink) {
  return fmt::format(R"(data_sources:
  small:
    Sample: {{ rows: 20000, seed: 1 }}
  large:
    Sample: {{ rows: 50000, seed: 2 }}
data_sinks:
  a:
    DuckDB: {{ path: a.duckdb, table: trips }}
  b:
    DuckDB: {{ path: b.duckdb, table: trips }}
  third:
    {}
pipelines:
  alpha:
    data_source: data_sources.small
    data_sink: data_sinks.a
  beta:
    data_source: data_sources.large
    data_sink: data_sinks.b
  {}:
    data_source: data_sources.small
    data_sink: data_sinks.third
)",
                     third_sink, third);
}

// alpha and beta landed every row once (read after serve let go of the files).
void expect_healthy_pipelines_landed_every_row_once(const PipelineFixture& f) {
  EXPECT_EQ(duckdb_value(f.path("a.duckdb"), "SELECT count(*) || ' ' || count(DISTINCT trip_id) FROM trips"),
            "20000 20000");
  EXPECT_EQ(duckdb_value(f.path("b.duckdb"), "SELECT count(*) || ' ' || count(DISTINCT trip_id) FROM trips"),
            "50000 50000");
}

std::string sample_to_duckdb_config_for_serve() {
  return "data_sources:\n  s:\n    Sample: { rows: 10 }\ndata_sinks:\n  d:\n    DuckDB: { path: d.duckdb, table: t }\n"
         "pipelines:\n  only:\n    data_source: data_sources.s\n    data_sink: data_sinks.d\n";
}

Result<HttpResponse> call(const std::string& method, const std::string& url, const std::string& authorization = "") {
  HttpRequest r;
  r.method = method;
  r.url = url;
  if (!authorization.empty()) r.headers.push_back("Authorization: " + authorization);
  return http_send(r);
}

nlohmann::json status(const std::string& base) {
  auto got = call("GET", base + "/api/status");
  if (!got || got->status != 200) return nlohmann::json::array();
  return nlohmann::json::parse(got->body);
}

nlohmann::json pipeline(const nlohmann::json& all, const std::string& name) {
  for (const auto& p : all) {
    if (p.at("pipeline") == name) return p;
  }
  return nlohmann::json::object();
}

// Polls /api/status until `ready` holds (or 90 s pass); returns the last status.
template <class F>
nlohmann::json wait_for(const std::string& base, F ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  nlohmann::json all;
  while (std::chrono::steady_clock::now() < deadline) {
    all = status(base);
    if (!all.empty() && ready(all)) return all;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return all;
}

ProcessResult chromium(const fs::path& cwd, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/chromium", "--headless",
                                   "--no-sandbox",      "--disable-gpu",
                                   "--hide-scrollbars", "--user-data-dir=" + (cwd / "chromium-profile").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, cwd, {}, 120);
}

// The serve process, stopped when the test ends however it ends.
struct Served {
  int pid;
  ~Served() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      wait_process(pid);
    }
  }
  int stop() {
    kill(pid, SIGTERM);
    const int code = wait_process(pid);
    pid = 0;
    return code;
  }
};

bool is_png(const fs::path& file) { return fs::exists(file) && read_text(file).starts_with("\x89PNG\r\n\x1a\n"); }

TEST(Serve, ThreePipelinesOneDeadThePageShowsThemAllAndActionsNeedTheToken) {
  const int dead_port = free_loopback_port();  // nothing listens there
  PipelineFixture f(serve_config(
      "gamma", fmt::format("Postgres: {{ host: 127.0.0.1, port: {}, user: loader, password: \"${{DEAD_PASSWORD}}\", "
                           "database: x, table: trips }}",
                           dead_port)));
  const int port = free_loopback_port();
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const std::map<std::string, std::string> env = {
      {"DATA_DIR", f.path("data").string()},      {"SKIPPR_CONFIG_FILE", ""},
      {"SKIPPR_SERVE_TOKEN", "serve-test-token"}, {"SKIPPR_SERVE_SAMPLE_SECONDS", "0.5"},
      {"DEAD_PASSWORD", "never-shown-pw"},        {"BUFFER_THRESHOLD_BYTES", "256KiB"}};
  Served served{spawn_process({SKIPPRD_BINARY, "serve", "--listen", fmt::format("127.0.0.1:{}", port)}, f.root(), env)};

  auto all = wait_for(base, [](const nlohmann::json& s) {
    return pipeline(s, "alpha").value("rows_landed", 0) == 20000 &&
           pipeline(s, "beta").value("rows_landed", 0) == 50000 &&
           pipeline(s, "gamma").value("last_error", std::string()).find("Connection refused") != std::string::npos;
  });
  ASSERT_EQ(pipeline(all, "alpha").value("rows_landed", 0), 20000) << all.dump(2);
  ASSERT_EQ(pipeline(all, "beta").value("rows_landed", 0), 50000) << all.dump(2);
  EXPECT_EQ(pipeline(all, "alpha").value("state", ""), "running");
  EXPECT_EQ(pipeline(all, "gamma").value("state", ""), "retrying");
  EXPECT_EQ(all.dump().find("never-shown-pw"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a few history samples for the charts

  // The page as a browser renders it.
  const auto dom = chromium(f.root(), {"--dump-dom", base + "/"});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  for (const char* row :
       {R"(data-pipeline="alpha" data-state="running")", R"(data-pipeline="beta" data-state="running")",
        R"(data-pipeline="gamma" data-state="retrying")"}) {
    EXPECT_NE(dom.out.find(row), std::string::npos) << row << " not in:\n" << dom.out;
  }
  EXPECT_NE(dom.out.find("Connection refused"), std::string::npos) << "the dead pipeline's error is not shown";
  size_t charts = 0;
  for (size_t at = dom.out.find("<svg class=\"chart\""); at != std::string::npos;
       at = dom.out.find("<svg class=\"chart\"", at + 1)) {
    ++charts;
  }
  EXPECT_EQ(charts, 6u) << "a throughput and a backlog chart per pipeline";
  EXPECT_TRUE(std::regex_search(dom.out, std::regex(R"(<polyline points="[0-9.]+,[0-9.]+ [0-9.]+,[0-9.]+)")))
      << "no chart has two points";
  EXPECT_NE(dom.out.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_EQ(dom.out.find("never-shown-pw"), std::string::npos);
  EXPECT_EQ(dom.out.find("https://"), std::string::npos) << "the page loads something from elsewhere";

  const fs::path artifacts = fs::path(SKIPPRD_BINARY).parent_path() / "test-artifacts";
  fs::create_directories(artifacts);
  for (const auto& [file, size] :
       {std::pair{"serve-status.png", "1280,900"}, std::pair{"serve-status-phone.png", "390,1400"}}) {
    const auto shot = chromium(
        f.root(), {"--window-size=" + std::string(size), "--screenshot=" + (artifacts / file).string(), base + "/"});
    EXPECT_EQ(shot.exit_code, 0) << shot.err;
    EXPECT_TRUE(is_png(artifacts / file)) << file;
  }

  // Actions: refused without the token, done with it.
  auto refused = call("POST", base + "/api/pipelines/alpha/disable");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 401);
  refused = call("POST", base + "/api/pipelines/alpha/disable", "Bearer wrong-token");
  EXPECT_EQ(refused->status, 401);
  auto disabled = call("POST", base + "/api/pipelines/alpha/disable", "Bearer serve-test-token");
  ASSERT_TRUE(disabled.has_value());
  EXPECT_EQ(disabled->status, 200) << disabled->body;
  all = wait_for(base, [](const nlohmann::json& s) { return pipeline(s, "alpha").value("state", "") == "disabled"; });
  EXPECT_EQ(pipeline(all, "alpha").value("state", ""), "disabled");
  // The scheme is case-insensitive; an action asked for with GET is 405 naming the method it takes.
  auto enabled = call("POST", base + "/api/pipelines/alpha/enable", "bearer serve-test-token");
  EXPECT_EQ(enabled->status, 200) << enabled->body;
  auto wrong_method = call("GET", base + "/api/pipelines/alpha/enable", "Bearer serve-test-token");
  ASSERT_TRUE(wrong_method.has_value());
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_EQ(wrong_method->headers["allow"], "POST");
  all = wait_for(base, [](const nlohmann::json& s) { return pipeline(s, "alpha").value("state", "") == "running"; });
  EXPECT_EQ(pipeline(all, "alpha").value("state", ""), "running");
  auto unknown = call("POST", base + "/api/pipelines/nosuch/disable", "Bearer serve-test-token");
  EXPECT_EQ(unknown->status, 404);
  // A stream's name in a resync action is URL-decoded (a name may hold a space or a slash): the answer names it as
  // written (alpha's source has one stream, so it is refused).
  auto resync = call("POST", base + "/api/pipelines/alpha/resync/odd%20name%2Fx", "Bearer serve-test-token");
  ASSERT_TRUE(resync.has_value());
  EXPECT_NE(resync->body.find("one stream ('odd name/x')"), std::string::npos) << resync->body;

  auto metrics = call("GET", base + "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_NE(metrics->body.find(R"(skippr_rows_landed_total{pipeline="beta"} 50000)"), std::string::npos)
      << metrics->body;
  // Every pipeline has its state whether a run of it is registered or not: the dead one is down and retrying.
  EXPECT_EQ(promtool_problems(f.path("serve-scrape.txt"), metrics->body), "");
  const auto series = prometheus_samples(metrics->body);
  auto sample = [&](const std::string& name) {  // absent: NaN, which equals nothing
    auto it = series.find(name);
    return it == series.end() ? std::nan("") : it->second;
  };
  EXPECT_EQ(sample(R"(skippr_pipeline_up{pipeline="gamma"})"), 0) << metrics->body;
  EXPECT_EQ(sample(R"(skippr_pipeline_state{pipeline="gamma",state="retrying"})"), 1) << metrics->body;
  EXPECT_EQ(sample(R"(skippr_pipeline_state{pipeline="gamma",state="running"})"), 0) << metrics->body;
  EXPECT_EQ(sample(R"(skippr_pipeline_up{pipeline="beta"})"), 1) << metrics->body;
  EXPECT_EQ(sample(R"(skippr_pipeline_state{pipeline="beta",state="running"})"), 1) << metrics->body;
  EXPECT_TRUE(series.contains(R"(skippr_pipeline_restarts_total{pipeline="alpha"})")) << metrics->body;

  // An action is carried out on a thread of its own while its request waits. Disabling the dead pipeline takes its
  // run's whole grace period (10 s: its committed batches cannot land), and meanwhile the page is answered and a
  // second action on that pipeline is refused with 409.
  auto disable_gamma = [&] { return call("POST", base + "/api/pipelines/gamma/disable", "Bearer serve-test-token"); };
  auto one = std::async(std::launch::async, disable_gamma);
  auto other = std::async(std::launch::async, disable_gamma);
  // Whichever got the pipeline first is carried out for 10 s; the other is refused at once.
  std::future<Result<HttpResponse>>* refused_one = nullptr;
  std::future<Result<HttpResponse>>* carried_out = nullptr;
  for (int i = 0; i < 100 && refused_one == nullptr; ++i) {
    if (one.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready) {
      refused_one = &one, carried_out = &other;
    } else if (other.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready) {
      refused_one = &other, carried_out = &one;
    }
  }
  ASSERT_NE(refused_one, nullptr) << "neither action was answered within 4 s: the second one waited for the first";
  auto second = refused_one->get();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status, 409) << second->body;
  EXPECT_NE(second->body.find("an action on pipeline 'gamma' is being carried out"), std::string::npos) << second->body;
  auto page = call("GET", base + "/");
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(carried_out->wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the page was answered only after the action";
  auto first = carried_out->get();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->status, 200) << first->body;
  all = wait_for(base, [](const nlohmann::json& s) { return pipeline(s, "gamma").value("state", "") == "disabled"; });
  EXPECT_EQ(pipeline(all, "gamma").value("state", ""), "disabled");

  EXPECT_EQ(served.stop(), 0);
  expect_healthy_pipelines_landed_every_row_once(f);
}

// One pipeline whose run throws (an injected fault in its source's poll, on the run's reader thread) is marked
// failed with its error; the process lives on and the two healthy pipelines land every row once. Before, the
// exception ended the whole process (std::terminate) within a second.
TEST(Serve, OnePipelineThatThrowsFailsAloneAndTheOthersLandEveryRow) {
  PipelineFixture f(serve_config("crashy", "DuckDB: { path: c.duckdb, table: trips }"));
  const int port = free_loopback_port();
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const std::map<std::string, std::string> env = {{"DATA_DIR", f.path("data").string()},
                                                  {"SKIPPR_CONFIG_FILE", ""},
                                                  {"SKIPPR_SERVE_TOKEN", "serve-test-token"},
                                                  {"SKIPPR_TEST_THROW_IN_POLL", "crashy"},
                                                  {"BUFFER_THRESHOLD_BYTES", "256KiB"}};
  Served served{spawn_process({SKIPPRD_BINARY, "serve", "--listen", fmt::format("127.0.0.1:{}", port)}, f.root(), env)};
  auto all = wait_for(base, [](const nlohmann::json& s) {
    return pipeline(s, "alpha").value("rows_landed", 0) == 20000 &&
           pipeline(s, "beta").value("rows_landed", 0) == 50000 && pipeline(s, "crashy").value("state", "") == "failed";
  });
  EXPECT_EQ(pipeline(all, "crashy").value("state", ""), "failed") << all.dump(2);
  const std::string error = pipeline(all, "crashy").value("last_error", std::string());
  EXPECT_NE(error.find("unexpected failure in the reader: injected fault"), std::string::npos) << all.dump(2);
  EXPECT_EQ(pipeline(all, "alpha").value("rows_landed", 0), 20000) << all.dump(2);
  EXPECT_EQ(pipeline(all, "beta").value("rows_landed", 0), 50000) << all.dump(2);
  // Still alive a while later (a failed pipeline waits for an action; it is not restarted in a loop).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  all = status(base);
  ASSERT_FALSE(all.empty()) << "serve is gone";
  EXPECT_EQ(pipeline(all, "crashy").value("restarts", -1), 0) << all.dump(2);

  EXPECT_EQ(served.stop(), 0);
  expect_healthy_pipelines_landed_every_row_once(f);
}

// What serve does not do is said, not silently ignored: a SIGHUP is answered in the log (before, it killed serve);
// a pipeline added to skippr.yml since serve started is 404 saying so; a reset against an edited skippr.yml is
// refused; DISABLE PIPELINE from the CLI is refused while serve's run holds the pipeline (before, it printed success
// and changed nothing) and, once the run stopped, takes effect (serve shows it disabled, and ENABLE resumes it).
TEST(Serve, SighupConfigEditsAndCliActionsAreAnsweredNotIgnored) {
  PipelineFixture f(R"(data_sources:
  s:
    Sample: { rows: 500 }
data_sinks:
  d:
    DuckDB: { path: d.duckdb, table: t }
pipelines:
  only:
    data_source: data_sources.s
    data_sink: data_sinks.d
)");
  const int port = free_loopback_port();
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const std::map<std::string, std::string> env = {
      {"DATA_DIR", f.path("data").string()}, {"SKIPPR_CONFIG_FILE", ""}, {"SKIPPR_SERVE_TOKEN", "tok"}};
  Served served{spawn_process({SKIPPRD_BINARY, "serve", "--listen", fmt::format("127.0.0.1:{}", port)}, f.root(), env)};
  auto all = wait_for(base, [](const nlohmann::json& s) { return pipeline(s, "only").value("rows_landed", 0) == 500; });
  ASSERT_EQ(pipeline(all, "only").value("rows_landed", 0), 500) << all.dump(2);

  kill(served.pid, SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_FALSE(status(base).empty()) << "serve died on SIGHUP";
  EXPECT_NE(read_text(f.path("spawned.err")).find("SIGHUP: serve does not reload"), std::string::npos)
      << read_text(f.path("spawned.err"));

  // The CLI cannot disable what serve runs: refused with exit 3, naming where to do it.
  auto cli = f.skipprd({"query", "--sql", "DISABLE PIPELINE only"});
  EXPECT_EQ(cli.exit_code, 3) << cli.out << cli.err;
  EXPECT_NE(cli.err.find("POST /api/pipelines/only/disable"), std::string::npos) << cli.err;

  // An edited skippr.yml: a new pipeline is 404 saying why; a reset is refused (it would read the old source).
  write_text(f.path("skippr.yml"), read_text(f.path("skippr.yml")) +
                                       "  added:\n    data_source: data_sources.s\n    data_sink: data_sinks.d\n");
  auto added = call("POST", base + "/api/pipelines/added/disable", "Bearer tok");
  ASSERT_TRUE(added.has_value());
  EXPECT_EQ(added->status, 404);
  EXPECT_NE(added->body.find("changed since serve started: restart serve"), std::string::npos) << added->body;
  auto reset = call("POST", base + "/api/pipelines/only/reset", "Bearer tok");
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->status, 409) << reset->body;
  EXPECT_NE(reset->body.find("restart serve first"), std::string::npos) << reset->body;

  EXPECT_EQ(served.stop(), 0);
  EXPECT_EQ(duckdb_value(f.path("d.duckdb"), "SELECT count(*) FROM t"), "500") << "the refused reset changed data";
  // Disabled from the CLI while serve is down: the next serve shows it disabled and runs nothing. ENABLE from
  // the CLI while serve holds no run of it takes effect, and serve picks it up within seconds.
  write_text(f.path("skippr.yml"),
             read_text(f.path("skippr.yml")).substr(0, read_text(f.path("skippr.yml")).find("  added:")));
  cli = f.skipprd({"query", "--sql", "DISABLE PIPELINE only"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  Served again{spawn_process({SKIPPRD_BINARY, "serve", "--listen", fmt::format("127.0.0.1:{}", port)}, f.root(), env)};
  all = wait_for(base, [](const nlohmann::json& s) { return pipeline(s, "only").value("state", "") == "disabled"; });
  EXPECT_EQ(pipeline(all, "only").value("state", ""), "disabled") << all.dump(2);
  cli = f.skipprd({"query", "--sql", "ENABLE PIPELINE only"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  all = wait_for(base, [](const nlohmann::json& s) { return pipeline(s, "only").value("state", "") == "running"; });
  EXPECT_EQ(pipeline(all, "only").value("state", ""), "running") << all.dump(2);
  EXPECT_EQ(again.stop(), 0);
}

// The page and /api/status count every run (SHOW STATS), not only serve's: after a CLI run landed rows, rejected one
// and dead-lettered another, serve's idle run shows those totals (and 0 for itself), with the rejected row and the
// dead letter. Before, everything read 0 after a restart and rejects and dead letters were not shown at all.
TEST(Serve, ThePageShowsEveryRunsTotalsWithRejectedRowsAndDeadLetters) {
  PipelineFixture f(R"(data_sources:
  inbox:
    File: { path: "in/*.jsonl" }
data_sinks:
  d:
    DuckDB: { path: out.duckdb, table: orders }
pipelines:
  orders:
    data_source: data_sources.inbox
    data_sink: data_sinks.d
)");
  duckdb_write(f.path("out.duckdb"), "CREATE TABLE orders (id BIGINT, code BIGINT)");
  write_text(f.path("in/a.jsonl"), "{\"id\":1}\n{\"id\":2}\n{\"\":5,\"id\":3}\n{\"id\":4}\n");
  write_text(f.path("in/b.jsonl"), "{\"id\":5,\"code\":\"x12\"}\n");
  auto r = f.skipprd({"sync", "--pipeline", "orders", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const int port = free_loopback_port();
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const std::map<std::string, std::string> env = {{"DATA_DIR", f.path("data").string()}, {"SKIPPR_CONFIG_FILE", ""}};
  Served served{spawn_process({SKIPPRD_BINARY, "serve", "--listen", fmt::format("127.0.0.1:{}", port)}, f.root(), env)};
  auto all = wait_for(base, [](const nlohmann::json& s) {
    return pipeline(s, "orders").value("all_runs", nlohmann::json::object()).value("rows_landed", 0) == 3;
  });
  const auto orders = pipeline(all, "orders");
  ASSERT_TRUE(orders.contains("all_runs")) << all.dump(2);
  EXPECT_EQ(orders["all_runs"].value("rows_landed", 0), 3) << all.dump(2);
  EXPECT_EQ(orders["all_runs"].value("rows_rejected", 0), 1) << all.dump(2);
  EXPECT_EQ(orders["all_runs"].value("dead_letters", 0), 1) << all.dump(2);
  EXPECT_EQ(orders.value("rows_landed", -1), 0) << "this run landed nothing new: " << all.dump(2);
  auto page = call("GET", base + "/");
  ASSERT_TRUE(page.has_value());
  EXPECT_NE(page->body.find("1 rows rejected"), std::string::npos) << page->body;
  EXPECT_NE(page->body.find("1 dead letters"), std::string::npos) << page->body;
  EXPECT_NE(page->body.find("this run 0"), std::string::npos) << page->body;
  EXPECT_EQ(served.stop(), 0);
}

// A --listen port another process holds is "retry later" (exit 75: the unit restarts serve), naming the address;
// nothing runs. An address that is not this machine's is a configuration error (exit 2).
TEST(Serve, ATakenListenPortIsRetryLaterAndAForeignAddressAConfigError) {
  PipelineFixture f(sample_to_duckdb_config_for_serve());
  const int port = free_loopback_port();
  ProcessResult r;
  {
    PortHolder holder(port, f.root());
    r = f.skipprd({"serve", "--listen", fmt::format("127.0.0.1:{}", port)}, {}, 30);
  }
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find(fmt::format("--listen 127.0.0.1:{}: cannot listen on 127.0.0.1:{}: another process is "
                                   "listening there",
                                   port, port)),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(f.path("d.duckdb"))) << "a pipeline ran";

  r = f.skipprd({"serve", "--listen", "192.0.2.1:8484"}, {}, 30);  // TEST-NET-1: never this machine's
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("use an address of this machine"), std::string::npos) << r.err;
}

// SKIPPR_METRICS_ADDRESS equal to --listen is served there (serve answers /metrics itself); one sharing only the
// port (every interface beside loopback) is a configuration error saying so. Before, both collided with serve's own
// socket and blamed "another process" with exit 75, which the unit retries forever.
TEST(Serve, AMetricsAddressOnTheListenPortIsServedThereOrRefusedSayingWhy) {
  PipelineFixture f(sample_to_duckdb_config_for_serve());
  const int port = free_loopback_port();
  const std::string listen = fmt::format("127.0.0.1:{}", port);
  auto r = f.skipprd({"serve", "--listen", listen}, {{"SKIPPR_METRICS_ADDRESS", fmt::format(":{}", port)}}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(fmt::format("share port {}: serve already answers /metrics at http://{}/metrics", port, listen)),
            std::string::npos)
      << r.err;

  const std::map<std::string, std::string> env = {
      {"DATA_DIR", f.path("data").string()}, {"SKIPPR_CONFIG_FILE", ""}, {"SKIPPR_METRICS_ADDRESS", listen}};
  Served served{spawn_process({SKIPPRD_BINARY, "serve", "--listen", listen}, f.root(), env)};
  const std::string base = "http://" + listen;
  auto all = wait_for(base, [](const nlohmann::json& s) { return pipeline(s, "only").value("rows_landed", 0) == 10; });
  EXPECT_EQ(pipeline(all, "only").value("rows_landed", 0), 10) << read_text(f.path("spawned.err"));
  auto metrics = call("GET", base + "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_NE(metrics->body.find(R"(skippr_rows_landed_total{pipeline="only"} 10)"), std::string::npos) << metrics->body;
  EXPECT_EQ(served.stop(), 0);
}

// What serve cannot run safely in one process stops it before anything runs (exit 2): two pipelines on one DuckDB
// file, and chaos mode (which kills the process, so every pipeline).
TEST(Serve, RefusesPipelinesSharingADuckDbFileAndChaosMode) {
  PipelineFixture f(R"(data_sources:
  s:
    Sample: { rows: 10 }
data_sinks:
  one:
    DuckDB: { path: same.duckdb, table: a }
  two:
    DuckDB: { path: same.duckdb, table: b }
pipelines:
  first:
    data_source: data_sources.s
    data_sink: data_sinks.one
  second:
    data_source: data_sources.s
    data_sink: data_sinks.two
)");
  auto r = f.skipprd({"serve", "--listen", fmt::format("127.0.0.1:{}", free_loopback_port())}, {}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("pipelines 'first' and 'second' both use the DuckDB file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(f.path("same.duckdb")));

  PipelineFixture chaos(sample_to_duckdb_config_for_serve());
  r = chaos.skipprd({"serve", "--listen", fmt::format("127.0.0.1:{}", free_loopback_port())},
                    {{"SKIPPR_CHAOS_MODE", "yes"}}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("SKIPPR_CHAOS_MODE kills the whole process"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace skippr::test
