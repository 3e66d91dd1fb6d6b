// HttpClient source against a local paginated JSON API (cpp-httplib in a thread): every pagination type, an
// incremental second run that reads only new records, a 429 followed by success, and a page that is not JSON.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fmt/format.h>
#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "streaming/http_test_client.h"
#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr int kPageSize = 5;

// Records id 1..count, `updated` = 1000 + id; `since` filters updated > since. /cursor answers 429 once.
class FakeApi {
 public:
  FakeApi() : port_(free_loopback_port()) {
    server_.Get("/cursor", [this](const httplib::Request& req, httplib::Response& res) {
      ++requests_;
      if (!served_429_.exchange(true)) {
        res.status = 429;
        res.set_header("Retry-After", "1");
        return;
      }
      const int from = req.has_param("cursor") ? std::stoi(req.get_param_value("cursor")) : 0;
      auto items = page(req, from, std::stoi(req.get_param_value("limit")));
      nlohmann::json body = {{"data", items}, {"next", nullptr}};
      if (!items.empty() && items.back()["id"].get<int>() < count_)
        body["next"] = std::to_string(items.back()["id"].get<int>());
      res.set_content(body.dump(), "application/json");
    });
    server_.Get("/offset", [this](const httplib::Request& req, httplib::Response& res) {
      auto items = page(req, std::stoi(req.get_param_value("offset")), std::stoi(req.get_param_value("limit")));
      res.set_content(nlohmann::json{{"data", items}}.dump(), "application/json");
    });
    server_.Get("/page", [this](const httplib::Request& req, httplib::Response& res) {
      const int size = std::stoi(req.get_param_value("per_page"));
      auto items = page(req, (std::stoi(req.get_param_value("page")) - 1) * size, size);
      res.set_content(nlohmann::json{{"results", {{"items", items}}}}.dump(), "application/json");
    });
    server_.Get("/link", [this](const httplib::Request& req, httplib::Response& res) {
      const int n = req.has_param("p") ? std::stoi(req.get_param_value("p")) : 0;
      auto items = page(req, n * kPageSize, kPageSize);
      if ((n + 1) * kPageSize < static_cast<int>(filtered(req).size())) {
        res.set_header(
            "Link", fmt::format("<http://127.0.0.1:{}/link?p={}{}>; rel=\"next\", <http://x/last>; rel=\"last\"", port_,
                                n + 1, req.has_param("since") ? "&since=" + req.get_param_value("since") : ""));
      }
      res.set_content(nlohmann::json(items).dump(), "application/json");
    });
    server_.Get("/broken", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("<html>oops</html>", "text/html");
    });
    if (!server_.bind_to_port("127.0.0.1", port_)) throw std::runtime_error("cannot bind the fake API");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeApi() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return fmt::format("http://127.0.0.1:{}{}", port_, path); }
  void set_count(int n) { count_ = n; }
  int requests() const { return requests_; }
  bool served_429() const { return served_429_; }

 private:
  std::vector<nlohmann::json> filtered(const httplib::Request& req) const {
    const int since = req.has_param("since") ? std::stoi(req.get_param_value("since")) : 0;
    std::vector<nlohmann::json> out;
    for (int id = 1; id <= count_; ++id) {
      if (1000 + id > since)
        out.push_back(
            {{"id", id}, {"updated", 1000 + id}, {"name", fmt::format("n{}", id)}, {"meta", {{"even", id % 2 == 0}}}});
    }
    return out;
  }
  nlohmann::json page(const httplib::Request& req, int skip, int limit) const {
    auto all = filtered(req);
    // The cursor type pages by id: skip records up to the cursor id.
    if (req.path == "/cursor")
      std::erase_if(all, [&](const nlohmann::json& r) { return r["id"].get<int>() <= skip; });
    else
      all.erase(all.begin(), all.begin() + std::min<size_t>(skip, all.size()));
    if (all.size() > static_cast<size_t>(limit)) all.resize(limit);
    return all;
  }

  int port_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<int> count_ = 23, requests_ = 0;
  std::atomic<bool> served_429_ = false;
};

// A pipeline from the API at `url` into DuckDB; `lines` are more HttpClient parameters, one per line.
std::string api_config(const std::string& url, int page_size, const std::string& lines) {
  return fmt::format(R"(data_sources:
  api:
    HttpClient:
      url: "{}"
      pagination_page_size: {}
{}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: items }}
pipelines:
  api:
    data_source: data_sources.api
    data_sink: data_sinks.db
)",
                     url, page_size, lines);
}

std::string client_config(const std::string& url, const std::string& paging) {
  return api_config(url, kPageSize,
                    "      auth_type: bearer\n      auth_token: ${API_TOKEN}\n      incremental_param: since\n"
                    "      incremental_cursor_field: updated\n" +
                        paging);
}

struct Case {
  std::string path, paging;
};

class HttpClientPagination : public ::testing::TestWithParam<Case> {};

TEST_P(HttpClientPagination, ReadsEveryPageThenOnlyNewRecords) {
  FakeApi api;
  PipelineFixture f(client_config(api.url(GetParam().path), GetParam().paging));
  const std::map<std::string, std::string> env = {{"API_TOKEN", "t0ken"}};
  auto first = f.skipprd({"sync", "--pipeline", "api", "--once"}, env, 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto db = f.path("out.duckdb");
  EXPECT_EQ(
      duckdb_value(db, "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM items"),
      "23 23 1 23");
  EXPECT_EQ(duckdb_value(db,
                         "SELECT count(*) FROM items WHERE name <> 'n' || id OR updated <> 1000 + id OR "
                         "meta::VARCHAR <> '{\"even\":' || (id % 2 = 0) || '}'"),
            "0");
  api.set_count(31);  // 8 new records: the second run must read those only
  auto second = f.skipprd({"sync", "--pipeline", "api", "--once"}, env, 120);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || max(id) FROM items"), "31 31 31");
}

INSTANTIATE_TEST_SUITE_P(EveryType, HttpClientPagination,
                         ::testing::Values(Case{"/cursor", "      pagination_type: cursor\n      records_path: /data"},
                                           Case{"/offset", "      pagination_type: offset\n      records_path: /data"},
                                           Case{"/page",
                                                "      pagination_type: page\n      records_path: /results/items"},
                                           Case{"/link", "      pagination_type: link_header"}),
                         [](const auto& info) { return info.param.path.substr(1); });

TEST(HttpClientSource, RetriesA429AfterRetryAfter) {
  FakeApi api;
  PipelineFixture f(client_config(api.url("/cursor"), "      pagination_type: cursor\n      records_path: /data"));
  auto r = f.skipprd({"sync", "--pipeline", "api", "--once", "--log"}, {{"API_TOKEN", "t"}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(api.served_429());
  EXPECT_NE(r.err.find("HTTP 429"), std::string::npos) << r.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(DISTINCT id) || '/' || count(*) FROM items"), "23/23");
}

TEST(HttpClientSource, APageThatIsNotJsonIsAnErrorNamingTheUrl) {
  FakeApi api;
  PipelineFixture f(client_config(api.url("/broken"), ""));
  auto r = f.skipprd({"sync", "--pipeline", "api", "--once"}, {{"API_TOKEN", "t"}}, 120);
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find(api.url("/broken")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is not JSON"), std::string::npos) << r.err;
}

// An API on a loopback port whose answers the test scripts: the handler gets the request and a call count.
class ScriptedApi {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&, int call)>;
  explicit ScriptedApi(Handler handler) : port_(free_loopback_port()), handler_(std::move(handler)) {
    server_.Get("/api", [this](const httplib::Request& req, httplib::Response& res) { handler_(req, res, ++calls_); });
    if (!server_.bind_to_port("127.0.0.1", port_)) throw std::runtime_error("cannot bind the scripted API");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ScriptedApi() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}/api", port_); }
  int calls() const { return calls_; }

 private:
  int port_;
  Handler handler_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<int> calls_ = 0;
};

constexpr int kRecords = 1000, kPage = 100;

// Records kRecords..1 newest first (`updated` = 1000 + id, descending), `since` filtering updated > since, offset
// paging; while `broken_from_page` is set, that page answers 400 (a run that ends part-way).
struct NewestFirstApi {
  std::atomic<int> broken_page = -1;
  std::atomic<int> page_delay_ms = 0;
  ScriptedApi api{[this](const httplib::Request& req, httplib::Response& res, int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(page_delay_ms.load()));
    const int since = req.has_param("since") ? std::stoi(req.get_param_value("since")) : 0;
    const int offset = std::stoi(req.get_param_value("offset"));
    if (offset / kPage == broken_page) {
      res.status = 400;
      return;
    }
    nlohmann::json items = nlohmann::json::array();
    int skipped = 0;
    for (int id = kRecords; id >= 1 && static_cast<int>(items.size()) < kPage; --id) {
      if (1000 + id <= since || skipped++ < offset) continue;
      items.push_back({{"id", id}, {"updated", 1000 + id}});
    }
    res.set_content(nlohmann::json{{"data", items}}.dump(), "application/json");
  }};
};

std::string scripted_config(const std::string& url, const std::string& more,
                            const std::string& records_path = "/data") {
  return api_config(url, kPage, fmt::format("      records_path: \"{}\"\n{}", records_path, more));
}

// Every poll is its own batch, so what a run read before it stopped is committed.
const std::map<std::string, std::string> kBatchPerPage = {{"BUFFER_THRESHOLD_BYTES", "1"}};

// A run cut short on an API that lists newest first: the rerun resumes at the next page of that run (the position
// holds the page state and the cursor moves only when a run has read every page), so nothing is lost or repeated.
TEST(HttpClientEdges, NewestFirstIncrementalRunCutShortLosesNothing) {
  NewestFirstApi api;
  PipelineFixture f(scripted_config(api.api.url(),
                                    "      pagination_type: offset\n      incremental_param: since\n"
                                    "      incremental_cursor_field: updated"));
  api.broken_page = 6;
  auto cut = f.skipprd({"sync", "--pipeline", "api", "--once"}, kBatchPerPage, 120);
  ASSERT_NE(cut.exit_code, 0) << "the run was meant to stop at page 6";
  const auto db = f.path("out.duckdb");
  ASSERT_EQ(duckdb_value(db, "SELECT count(*) FROM items"), "600");
  api.broken_page = -1;
  auto rest = f.skipprd({"sync", "--pipeline", "api", "--once"}, kBatchPerPage, 120);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  EXPECT_EQ(
      duckdb_value(db, "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM items"),
      "1000 1000 1 1000");
  // And the next run reads only what is newer than everything read: nothing here.
  auto again = f.skipprd({"sync", "--pipeline", "api", "--once"}, kBatchPerPage, 120);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM items"), "1000");
}

// Without an incremental cursor the page state is in the position too: a run cut short resumes at the next page
// rather than reading committed pages again. A finished run's rerun reads everything again (a full refresh), which
// the run says when the landing is append.
TEST(HttpClientEdges, CursorLessRunCutShortResumesAtTheNextPage) {
  NewestFirstApi api;
  PipelineFixture f(scripted_config(api.api.url(), "      pagination_type: offset"));
  api.broken_page = 4;
  auto cut = f.skipprd({"sync", "--pipeline", "api", "--once", "--log"}, kBatchPerPage, 120);
  ASSERT_NE(cut.exit_code, 0);
  EXPECT_NE(cut.err.find("has no incremental_cursor_field, so each run reads the whole API again"), std::string::npos)
      << cut.err;
  const auto db = f.path("out.duckdb");
  ASSERT_EQ(duckdb_value(db, "SELECT count(*) FROM items"), "400");
  api.broken_page = -1;
  auto rest = f.skipprd({"sync", "--pipeline", "api", "--once"}, kBatchPerPage, 120);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) || ' ' || count(DISTINCT id) FROM items"), "1000 1000");
}

// The same newest-first API read under kill -9 at random instants (chaos mode), with DATA_DIR lost after every third
// kill (the run then resumes from the position DuckDB's ledger holds): every record lands exactly once.
TEST(HttpClientEdges, NewestFirstIncrementalUnderKillsLandsEveryRecordOnce) {
  NewestFirstApi api;
  api.page_delay_ms = 150;
  PipelineFixture f(scripted_config(api.api.url(),
                                    "      pagination_type: offset\n      incremental_param: since\n"
                                    "      incremental_cursor_field: updated"));
  std::map<std::string, std::string> env = kBatchPerPage;
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.1";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.5";
  const ChaosRuns runs =
      sync_until_done_under_chaos(f, "api", env, 2300, {.max_runs = 200, .lose_data_dir_every = 3, .min_kills = 3});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 3) << runs.summary();
  const auto db = f.path("out.duckdb");
  EXPECT_EQ(
      duckdb_value(db, "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM items"),
      "1000 1000 1 1000");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM items WHERE updated <> 1000 + id"), "0");  // as an unkilled run
  std::printf("[ metrics  ] %s\n", runs.summary().c_str());
}

// An API whose next cursor repeats would be read forever: the run stops with exit 1 naming the cursor.
TEST(HttpClientEdges, RepeatedNextCursorStopsWithTheToken) {
  ScriptedApi api([](const httplib::Request&, httplib::Response& res, int call) {
    nlohmann::json items = nlohmann::json::array();
    for (int i = 0; i < kPage; ++i) items.push_back({{"id", i}});
    res.set_content(nlohmann::json{{"data", items}, {"next", call == 1 ? "a1" : "same-token"}}.dump(),
                    "application/json");
  });
  PipelineFixture f(scripted_config(api.url(), "      pagination_type: cursor"));
  auto r = f.skipprd({"sync", "--pipeline", "api", "--once"}, {}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the next cursor 'same-token' a second time"), std::string::npos) << r.err;
  EXPECT_LE(api.calls(), 4);
}

// An API that ignores the offset parameter answers the same full page forever: exit 1 naming the parameter.
TEST(HttpClientEdges, IgnoredOffsetParameterStops) {
  ScriptedApi api([](const httplib::Request&, httplib::Response& res, int) {
    nlohmann::json items = nlohmann::json::array();
    for (int i = 0; i < kPage; ++i) items.push_back({{"id", i}});
    res.set_content(nlohmann::json{{"data", items}}.dump(), "application/json");
  });
  PipelineFixture f(scripted_config(api.url(), "      pagination_type: offset"));
  auto r = f.skipprd({"sync", "--pipeline", "api", "--once"}, {}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("ignores the offset parameter"), std::string::npos) << r.err;
}

// A relative Link header (RFC 8288 allows it; GitHub-style APIs send absolute ones) is resolved against the page.
TEST(HttpClientEdges, RelativeLinkHeaderIsFollowed) {
  ScriptedApi api([](const httplib::Request& req, httplib::Response& res, int) {
    const int p = req.has_param("p") ? std::stoi(req.get_param_value("p")) : 0;
    nlohmann::json items = nlohmann::json::array();
    for (int i = 0; i < 10; ++i) items.push_back({{"id", p * 10 + i}});
    if (p < 2) res.set_header("Link", fmt::format("<?p={}>; rel=\"next\"", p + 1));
    res.set_content(items.dump(), "application/json");
  });
  PipelineFixture f(scripted_config(api.url(), "      pagination_type: link_header", ""));
  auto r = f.skipprd({"sync", "--pipeline", "api", "--once"}, {}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) || ' ' || count(DISTINCT id) FROM items"), "30 30");
}

// records_path that the first page does not have is a configuration mistake: exit 2, saying what to fix.
TEST(HttpClientEdges, MissingRecordsPathIsAConfigError) {
  ScriptedApi api([](const httplib::Request&, httplib::Response& res, int) {
    res.set_content(R"({"items":[{"id":1}]})", "application/json");
  });
  PipelineFixture f(scripted_config(api.url(), ""));
  auto r = f.skipprd({"sync", "--pipeline", "api", "--once"}, {}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("has nothing at records_path '/data'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Fix records_path"), std::string::npos) << r.err;
}

// A bearer token, a basic-auth password and a Kafka SASL password appear in no message, log line, JSON event or file
// of DATA_DIR, also when the API refuses them (401) or the broker is unreachable, at --log debug.
TEST(Secrets, ApiTokensAndKafkaPasswordsAppearNowhere) {
  ScriptedApi api([](const httplib::Request& req, httplib::Response& res, int) {
    res.status = 401;
    res.set_content(R"({"error":"bad credentials"})", "application/json");
    (void)req;
  });
  const std::string token = "tok-9f8e7d-SECRET", password = "pw-7c6b5a-SECRET";
  struct Case {
    std::string source;
    std::string secret;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {fmt::format("HttpClient: {{ url: \"{}\", auth_type: bearer, auth_token: \"${{API_TOKEN}}\" }}", api.url()),
       token, 2},
      {fmt::format(
           "HttpClient: {{ url: \"{}\", auth_type: basic, auth_username: u, auth_password: \"${{API_PASSWORD}}\" "
           "}}",
           api.url()),
       password, 2},
      {"Kafka: { brokers: \"127.0.0.1:1\", topics: [t], group_id: g, connect_timeout_seconds: 1, security_protocol: "
       "sasl_plaintext, sasl_mechanism: PLAIN, sasl_username: u, sasl_password: \"${API_PASSWORD}\" }",
       password, 75},
  };
  for (const auto& c : cases) {
    PipelineFixture f(fmt::format(R"(data_sources:
  api:
    {}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: items }}
pipelines:
  api:
    data_source: data_sources.api
    data_sink: data_sinks.db
)",
                                  c.source));
    auto r = f.skipprd({"sync", "--pipeline", "api", "--once", "--output", "json", "--log", "debug"},
                       {{"API_TOKEN", token}, {"API_PASSWORD", password}}, 60);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.source << "\n" << r.err;
    EXPECT_EQ(r.out.find(c.secret), std::string::npos) << "the secret leaked: " << r.out;
    EXPECT_EQ(r.err.find(c.secret), std::string::npos) << "the secret leaked: " << r.err;
    EXPECT_TRUE(files_containing(f.path("data"), c.secret).empty());
  }
}

}  // namespace
}  // namespace skippr::test
