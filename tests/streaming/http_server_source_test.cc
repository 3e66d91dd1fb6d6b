// HttpServer source against the real skipprd binary: status codes, and acknowledged-but-lost = 0 under SIGKILL.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "streaming/http_test_client.h"
#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"
#include "support/stream_files.h"

namespace skippr::test {
namespace {

using namespace std::chrono_literals;

std::string http_server_config(int port, const std::string& extra = "") {
  return fmt::format(R"(data_sources:
  push:
    HttpServer: {{ listen_address: "127.0.0.1:{}", auth_token: "s3cret-token"{} }}
data_sinks:
  db:
    DuckDB: {{ path: out.duckdb, table: events }}
pipelines:
  ingest:
    data_source: data_sources.push
    data_sink: data_sinks.db
)",
                     port, extra);
}

const std::vector<std::string> kAuth = {"Authorization: Bearer s3cret-token", "Content-Type: application/json"};

int stop_and_wait(int pid) {
  kill(pid, SIGTERM);
  return wait_process(pid);
}

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error(fmt::format("connect to 127.0.0.1:{} failed", port));
  }
  return fd;
}

// True once the server closed (or reset) the connection; waits up to `wait_ms` for that.
bool closed_by_server(int fd, int wait_ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return false;
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// Slow clients: each connection sends its request one byte a second (a slowloris), never finishing in a test's time.
class Tricklers {
 public:
  Tricklers(int port, int count, std::string request) : request_(std::move(request)) {
    for (int i = 0; i < count; ++i) fds_.push_back(connect_loopback(port));
    thread_ = std::thread([this] {
      for (size_t at = 0; !stop_.load(); ++at) {
        for (int fd : fds_) send(fd, request_.data() + at % request_.size(), 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        for (int i = 0; i < 10 && !stop_.load(); ++i) std::this_thread::sleep_for(100ms);
      }
    });
  }
  ~Tricklers() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) close(fd);
  }
  int still_open() const {
    int open = 0;
    for (int fd : fds_) open += !closed_by_server(fd, 0);
    return open;
  }

 private:
  std::string request_;
  std::vector<int> fds_;
  std::atomic<bool> stop_ = false;
  std::thread thread_;
};

const std::string kSlowHead =
    "POST /ingest HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\nContent-Length: 9\r\n\r\n{\"id\":-1}";

TEST(HttpServerSource, AnswersEachKindOfRequestAndCommitsOnlyValidOnes) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ", max_body_bytes: 2000"));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest");
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  HttpClient c;

  EXPECT_EQ(c.request("POST", base + "/ingest", R"({"id":1})", {}).status, 401);
  EXPECT_EQ(c.request("POST", base + "/ingest", R"({"id":1})", {"Authorization: Bearer s3cret-tokeX"}).status, 401);
  EXPECT_EQ(c.request("POST", base + "/ingest", R"({"id":1})", {"Authorization: Bearer s3cret-token-longer"}).status,
            401);
  // Without the token a body is refused from the head: read and dropped, or (100-continue) not sent at all.
  EXPECT_EQ(c.request("POST", base + "/ingest", std::string(1500, ' '), {}).status, 401);
  EXPECT_EQ(c.request("POST", base + "/ingest", std::string(1500, ' '), {"Expect: 100-continue"}).status, 401);
  EXPECT_EQ(c.request("GET", base + "/ingest").status, 404);
  EXPECT_EQ(c.request("POST", base + "/healthz", "{}", kAuth).status, 404);
  // Malformed: the first record is fine, the second is not; nothing of the request may be committed.
  auto bad = c.request("POST", base + "/ingest", "{\"id\":900}\n{\"id\":901,", kAuth);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("record 2"), std::string::npos) << bad.body;
  EXPECT_EQ(c.request("POST", base + "/ingest", R"([{"id":902}, 5])", kAuth).status, 400);
  EXPECT_EQ(c.request("POST", base + "/ingest", std::string(3000, ' ') + "{}", kAuth).status, 413);

  auto one = c.request("POST", base + "/ingest", R"({"id":1,"name":"a","tags":{"x":[1,2]}})", kAuth);
  EXPECT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(c.request("POST", base + "/ingest", R"([{"id":2,"name":"b"},{"id":3,"score":1.5}])", kAuth).status, 200);
  EXPECT_EQ(c.request("POST", base + "/ingest", "{\"id\":4}\n{\"id\":5,\"name\":\"e\"}\n", kAuth).status, 200);
  // A field that changes type against earlier requests is a 400, not a stuck pipeline.
  EXPECT_EQ(c.request("POST", base + "/ingest", R"({"id":"six"})", kAuth).status, 400);
  auto health = c.request("GET", base + "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_NE(health.body.find(R"("committed_request":3)"), std::string::npos) << health.body;

  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
  const auto db = f.path("out.duckdb");
  EXPECT_EQ(duckdb_value(db, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM events"), "1,2,3,4,5");
  EXPECT_EQ(duckdb_value(db, "SELECT name FROM events WHERE id = 5"), "e");
  EXPECT_EQ(duckdb_value(db, "SELECT tags FROM events WHERE id = 1"), R"({"x":[1,2]})");
  EXPECT_EQ(duckdb_value(db, "SELECT score FROM events WHERE id = 3"), "1.5");
}

// curl -d sends application/x-www-form-urlencoded, and the HTTP library capped such bodies at 8 KiB (413 whatever
// max_body_bytes said). A 100 KiB body of that type is read as JSON like any other.
TEST(HttpServerSource, ALargeBodySentAsFormUrlencodedIsReadAsJson) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ""));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest");
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  HttpClient c;
  const std::vector<std::string> form = {"Authorization: Bearer s3cret-token",
                                         "Content-Type: application/x-www-form-urlencoded"};
  auto r = c.request("POST", base + "/ingest", R"({"id":7,"pad":")" + std::string(100000, 'p') + "\"}", form);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT id || ' ' || length(pad) FROM events"), "7 100000");
}

TEST(HttpServerSource, AckReceivedAnswersBeforeTheCommitAndStillLands) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ", ack: received"));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest");
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  HttpClient c;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(c.request("POST", base + "/ingest", fmt::format(R"({{"id":{}}})", i), kAuth).status, 200);
  }
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(DISTINCT id) || '/' || count(*) FROM events"), "20/20");
}

// A lost DATA_DIR with a source that cannot go back (what was pushed is gone once read): the next run says so in one
// line, reads from now on, and nothing that landed is lost or landed again (issue 11, item 1).
TEST(HttpServerSource, AFreshDataDirSaysTheSourceCannotGoBackAndLosesNothingThatLanded) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  HttpClient c;
  for (int run = 0; run < 2; ++run) {
    const int pid = spawn_sync(f, "ingest");
    ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
    for (int i = 0; i < 10; ++i) {
      ASSERT_EQ(c.request("POST", base + "/ingest", fmt::format(R"({{"id":{}}})", run * 100 + i), kAuth).status, 200);
    }
    EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
    if (run == 1) {
      EXPECT_NE(read_text(f.path("spawned.err")).find("cannot go back to a position committed elsewhere"),
                std::string::npos)
          << read_text(f.path("spawned.err"));
    }
    std::filesystem::remove_all(f.path("data"));
  }
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(DISTINCT id) || '/' || count(*) FROM events"), "20/20");
}

// Backpressure: while the destination is locked by another process, batches pile up in the bounded queues, the
// source's buffer fills, and requests get 503 with Retry-After instead of growing memory. Once the lock goes, requests
// are taken again, and exactly the records of the requests answered 200 land.
TEST(HttpServerSource, AFullBufferAnswers503WithRetryAfterAndRecoversWhenTheDestinationDoes) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ", ack: received, max_buffer_bytes: 3000"));
  // A first sync waits for the destination before it reads anything; a state made by RESET does not.
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE ingest"}).exit_code, 0);
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest", {{"BUFFER_THRESHOLD_BYTES", "1000"}, {"BUFFER_THRESHOLD_SECONDS", "1"}});
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  HttpClient c;
  const std::string pad(100, 'x');
  int next_id = 0;
  std::set<int> accepted, refused;
  auto send = [&] {
    const int id = next_id++;
    auto r = c.request("POST", base + "/ingest", fmt::format(R"({{"id":{},"pad":"{}"}})", id, pad), kAuth);
    if (r.status == 200) accepted.insert(id);
    if (r.status == 503) refused.insert(id);
    return r;
  };
  HttpReply busy;
  for (int i = 0; i < 3000 && busy.status != 503; ++i) busy = send();
  ASSERT_EQ(busy.status, 503) << "the buffer never filled while the destination was locked";
  EXPECT_EQ(busy.headers["retry-after"], "1");
  EXPECT_NE(busy.body.find("the buffer is full"), std::string::npos) << busy.body;
  EXPECT_GT(accepted.size(), 10u);

  kill(holder, SIGKILL);
  wait_process(holder);
  HttpReply again;
  for (int i = 0; i < 300 && again.status != 200; ++i) {  // the sink retries with backoff of up to 5 s
    again = send();
    if (again.status != 200) std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(again.status, 200) << again.body;
  for (int i = 0; i < 20; ++i) send();
  std::this_thread::sleep_for(1500ms);  // past BUFFER_THRESHOLD_SECONDS, so the last batch is cut and landed
  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));

  const auto db = f.path("out.duckdb");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) || '/' || count(DISTINCT id) FROM events"),
            fmt::format("{}/{}", accepted.size(), accepted.size()));
  const auto landed_refused =
      duckdb_value(db, fmt::format("SELECT count(*) FROM events WHERE id IN ({})", fmt::join(refused, ",")));
  EXPECT_EQ(landed_refused, "0") << "a request answered 503 was landed";
}

// 50,000 records in 5,000 requests from 8 concurrent clients while skipprd is SIGKILLed 6 times; every request that
// did not get a 200 is retried. Every record of a request that got a 200 must be in DuckDB; duplicates may only come
// from retried requests.
// Posts requests 0..requests-1 from `clients` keep-alive clients, each to path_of(r) with body_of(r), sent again
// until it gets 200, while the sync (`pid`, restarted with `env`) is SIGKILLed `kills` times, each once the next of
// kills + 1 equal shares of the requests is acknowledged. Returns each request's attempts; `killed` gets the kills.
std::vector<int> post_through_kills(const PipelineFixture& f, const std::map<std::string, std::string>& env,
                                    std::atomic<int>& pid, const std::string& base, int requests, int clients,
                                    int kills, unsigned seed, const std::function<std::string(int)>& path_of,
                                    const std::function<std::string(int)>& body_of, int& killed) {
  std::atomic<int> next_request = 0, acknowledged = 0, done_kills = 0;
  std::vector<int> attempts(requests, 0);
  std::atomic<bool> clients_done = false;
  std::thread killer([&] {
    std::mt19937 rng(seed);
    for (int k = 1; k <= kills; ++k) {
      while (acknowledged.load() < k * requests / (kills + 1) && !clients_done) std::this_thread::sleep_for(5ms);
      if (clients_done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
      kill(pid.load(), SIGKILL);
      EXPECT_EQ(wait_process(pid.load()), 137);
      ++done_kills;
      pid = spawn_sync(f, "ingest", env);
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      HttpClient c;
      for (int r = next_request++; r < requests; r = next_request++) {
        const std::string body = body_of(r);
        while (true) {
          ++attempts[r];
          if (c.request("POST", base + path_of(r), body, kAuth, 20000).status == 200) break;
          std::this_thread::sleep_for(20ms);
        }
        ++acknowledged;
      }
    });
  }
  for (auto& t : threads) t.join();
  clients_done = true;
  killer.join();
  killed = done_kills.load();
  return attempts;
}

TEST(HttpServerSource, AcknowledgedRecordsSurviveSigkill) {
  constexpr int kRequests = 5000, kPerRequest = 10, kClients = 8, kKills = 6;
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_SECONDS", "0.2"}};
  std::atomic<int> pid = spawn_sync(f, "ingest", env);
  int kills = 0;
  const std::vector<int> attempts = post_through_kills(
      f, env, pid, base, kRequests, kClients, kKills, 42, [](int) { return std::string("/ingest"); },
      [&](int r) {
        std::string body;
        for (int k = 0; k < kPerRequest; ++k) {
          const int id = r * kPerRequest + k;
          body += fmt::format(R"({{"id":{},"request":{},"payload":"record-{}-{}"}})", id, r, id, id * 7919 % 1000);
          body += '\n';
        }
        return body;
      },
      kills);
  EXPECT_EQ(kills, kKills);
  EXPECT_EQ(stop_and_wait(pid.load()), 0) << read_text(f.path("spawned.err"));

  const auto db = f.path("out.duckdb");
  const uint64_t rows = std::stoull(duckdb_value(db, "SELECT count(*) FROM events"));
  const uint64_t distinct = std::stoull(duckdb_value(db, "SELECT count(DISTINCT id) FROM events"));
  // acknowledged-but-lost: every id 0..49,999 present (all requests got their 200 in the end).
  EXPECT_EQ(distinct, static_cast<uint64_t>(kRequests * kPerRequest));
  EXPECT_EQ(duckdb_value(db, "SELECT min(id) || '-' || max(id) FROM events"),
            fmt::format("0-{}", kRequests * kPerRequest - 1));
  // Content: every row is exactly what its client sent.
  EXPECT_EQ(duckdb_value(db,
                         "SELECT count(*) FROM events WHERE request <> id // 10 OR payload <> 'record-' || id || "
                         "'-' || (id * 7919 % 1000)"),
            "0");
  // Duplicates come only from requests that were sent more than once.
  int retried = 0;
  for (int a : attempts) retried += a > 1;
  for (const auto& row :
       duckdb_rows(db, "SELECT DISTINCT request FROM events GROUP BY id, request HAVING count(*) > 1")) {
    EXPECT_GT(attempts[std::stoi(row[0])], 1) << "request " << row[0] << " was sent once but landed twice";
  }
  std::printf("[ metrics  ] kills=%d requests=%d retried_requests=%d rows=%llu distinct=%llu duplicates=%llu\n", kills,
              kRequests, retried, static_cast<unsigned long long>(rows), static_cast<unsigned long long>(distinct),
              static_cast<unsigned long long>(rows - distinct));
  RecordProperty("duplicates", std::to_string(rows - distinct));
}

// streams: three event types posted to /ingest/<stream>, each landed in its own table, under SIGKILL: every
// acknowledged record is in its stream's table (and no other), with what its client sent; a duplicate only where a
// request was sent again. A path for no stream is a 404 that names the streams.
TEST(HttpServerSource, ThreeStreamPathsLandInThreeTablesThroughKills) {
  constexpr int kRequests = 6000, kPerRequest = 10, kClients = 6, kKills = 4;
  const std::vector<std::string> kStreams = {"orders", "clicks", "sign-ups"};
  const int port = free_loopback_port();
  PipelineFixture f(R"(data_sources:
  push:
    HttpServer: { listen_address: "127.0.0.1:)" +
                    std::to_string(port) + R"(", auth_token: "s3cret-token", streams: [orders, clicks, sign-ups] }
data_sinks:
  db:
    DuckDB: { path: out.duckdb, table: "in_{stream}" }
pipelines:
  ingest:
    data_source: data_sources.push
    data_sink: data_sinks.db
)");
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_SECONDS", "0.2"}};
  std::atomic<int> pid = spawn_sync(f, "ingest", env);
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20));
  {
    HttpClient c;
    for (const std::string path : {"/ingest", "/ingest/other", "/ingest/"}) {
      const auto reply = c.request("POST", base + path, R"({"id":1})", kAuth);
      EXPECT_EQ(reply.status, 404) << path;
      EXPECT_NE(reply.body.find("orders, clicks, sign-ups"), std::string::npos) << reply.body;
    }
  }

  int kills = 0;
  const std::vector<int> attempts = post_through_kills(
      f, env, pid, base, kRequests, kClients, kKills, 7,
      [&](int r) { return "/ingest/" + kStreams[r % kStreams.size()]; },
      [&](int r) {
        std::string body;
        for (int k = 0; k < kPerRequest; ++k) {
          const int id = r * kPerRequest + k;
          body += fmt::format(R"({{"id":{},"request":{},"kind":"{}"}})", id, r, kStreams[r % kStreams.size()]) + "\n";
        }
        return body;
      },
      kills);
  EXPECT_EQ(kills, kKills);
  // Every request was acknowledged once committed; landing may lag behind. The last copy is stopped once it
  // serves (a SIGTERM while it starts would kill it), then a --once run lands whatever still waits in the WAL.
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20));
  const int stopped = stop_and_wait(pid.load());
  EXPECT_TRUE(stopped == 0 || stopped == 75) << stopped << ": " << read_text(f.path("spawned.err"));
  auto rest = f.skipprd({"sync", "--pipeline", "ingest", "--once"}, env);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;

  const auto db = f.path("out.duckdb");
  for (size_t s = 0; s < kStreams.size(); ++s) {
    const std::string table = stream_table("in_", kStreams[s]);
    int want = 0;
    for (int r = static_cast<int>(s); r < kRequests; r += static_cast<int>(kStreams.size())) want += kPerRequest;
    EXPECT_EQ(duckdb_value(db, fmt::format("SELECT count(DISTINCT id) FROM {}", table)), std::to_string(want));
    EXPECT_EQ(duckdb_value(db, fmt::format("SELECT count(*) FROM {} WHERE kind <> '{}' OR request <> id // 10 OR "
                                           "request % 3 <> {}",
                                           table, kStreams[s], s)),
              "0")
        << table;
    for (const auto& row : duckdb_rows(
             db, fmt::format("SELECT DISTINCT request FROM {} GROUP BY id, request HAVING count(*) > 1", table))) {
      EXPECT_GT(attempts[std::stoi(row[0])], 1) << "request " << row[0] << " was sent once but landed twice";
    }
  }
}

// Issue 11 item 5: a handler thread per connection let 70 clients that send 1 byte a second take every thread. Now a
// slow client is one idle socket: 80 of them (some in the head, some in the body) are open and trickling while 200
// ordinary requests are each answered within 2 s, and SIGTERM still stops the pipeline cleanly.
TEST(HttpServerSource, SlowClientsDoNotDelayOtherRequests) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest");
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  const std::string body_head =
      "POST /ingest HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\n"
      "Content-Length: 1000\r\n\r\n";
  Tricklers in_head(port, 40, kSlowHead);
  // The other 40 send their head at once, then their body a byte a second.
  std::vector<int> body_fds;
  for (int i = 0; i < 40; ++i) {
    body_fds.push_back(connect_loopback(port));
    send(body_fds.back(), body_head.data(), body_head.size(), MSG_NOSIGNAL);
  }
  std::atomic<bool> stop = false;
  std::thread body_trickler([&] {
    while (!stop) {
      for (int fd : body_fds) send(fd, "[", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      for (int i = 0; i < 10 && !stop; ++i) std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(1500ms);  // every slow connection is accepted and has sent something

  HttpClient c;
  double slowest = 0;
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto r = c.request("POST", base + "/ingest", fmt::format(R"({{"id":{}}})", i), kAuth, 5000);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slowest = std::max(slowest, seconds);
    ASSERT_EQ(r.status, 200) << "request " << i << ": " << r.body;
    EXPECT_LT(seconds, 2.0) << "request " << i;
  }
  std::printf("[ metrics  ] 80 slow connections open: 200 requests, slowest %.0f ms; %d of 40 slow heads still open\n",
              slowest * 1e3, in_head.still_open());

  const auto stop_start = std::chrono::steady_clock::now();
  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
  EXPECT_LT(std::chrono::steady_clock::now() - stop_start, 10s);
  stop = true;
  body_trickler.join();
  for (int fd : body_fds) close(fd);
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) || '/' || count(DISTINCT id) FROM events"), "200/200");
}

// max_connections: a connection beyond it is closed at once, while the connections under it are served; once slow
// clients go, new connections are taken again.
TEST(HttpServerSource, AConnectionBeyondMaxConnectionsIsClosedAndTheOthersAreServed) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ", max_connections: 20"));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest");
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  HttpClient c;  // keeps its connection: one of the 20
  ASSERT_EQ(c.request("POST", base + "/ingest", R"({"id":0})", kAuth).status, 200);
  int closed = 0;
  {
    Tricklers slow(port, 15, kSlowHead);  // 16 connections in all
    std::this_thread::sleep_for(500ms);
    std::vector<int> extra;
    for (int i = 0; i < 10; ++i) extra.push_back(connect_loopback(port));
    for (int fd : extra) closed += closed_by_server(fd, 1000);
    for (int fd : extra) close(fd);
    // 6 of the 10 are beyond the cap: one or two fewer when two server threads accept at the same moment, one more
    // if the server has not yet seen wait_for_http's connection go.
    EXPECT_GE(closed, 4) << "connections beyond max_connections were not closed";
    EXPECT_LE(closed, 7) << "connections under max_connections were closed";
    for (int i = 1; i <= 20; ++i) {
      auto r = c.request("POST", base + "/ingest", fmt::format(R"({{"id":{}}})", i), kAuth, 5000);
      ASSERT_EQ(r.status, 200) << "request " << i << ": " << r.body;
    }
    EXPECT_EQ(slow.still_open(), 15);
  }
  std::this_thread::sleep_for(300ms);  // the server sees the slow clients go
  HttpClient fresh;
  EXPECT_EQ(fresh.request("POST", base + "/ingest", R"({"id":21})", kAuth, 5000).status, 200);
  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) || '/' || count(DISTINCT id) FROM events"), "22/22");
  std::printf("[ metrics  ] max_connections 20, 16 open: %d of 10 more connections closed at once\n", closed);
}

// With ack: committed a waiting request holds no thread, only its suspended connection; commit_timeout_seconds still
// ends the wait: while the destination is locked the engine stops taking batches, and a request gets 503 in time.
TEST(HttpServerSource, ARequestNotCommittedInTimeGets503) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ", commit_timeout_seconds: 0.5"));
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE ingest"}).exit_code, 0);
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest", {{"BUFFER_THRESHOLD_BYTES", "1000"}, {"BUFFER_THRESHOLD_SECONDS", "1"}});
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  HttpClient c;
  HttpReply late;
  double waited = 0;
  for (int i = 0; i < 500 && late.status != 503; ++i) {
    const auto start = std::chrono::steady_clock::now();
    late = c.request("POST", base + "/ingest", fmt::format(R"({{"id":{},"pad":"{}"}})", i, std::string(100, 'x')),
                     kAuth, 5000);
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(late.status == 200 || late.status == 503) << late.status << " " << late.body;
  }
  ASSERT_EQ(late.status, 503) << "every request was committed while the destination was locked";
  EXPECT_NE(late.body.find("not committed in time"), std::string::npos) << late.body;
  EXPECT_EQ(late.headers["retry-after"], "1");
  EXPECT_GE(waited, 0.45);
  EXPECT_LT(waited, 3.0);
  kill(holder, SIGKILL);
  wait_process(holder);
  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
}

// A request still waiting for its commit when the pipeline stops is answered (503: retry), not left hanging, and the
// server is not stopped with suspended connections.
TEST(HttpServerSource, ARequestWaitingForItsCommitIsAnsweredAtStop) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ", commit_timeout_seconds: 60"));
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE ingest"}).exit_code, 0);
  const int holder = hold_duckdb_file(f.path("out.duckdb"), f.path("holder.ready"));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest", {{"BUFFER_THRESHOLD_BYTES", "1000"}, {"BUFFER_THRESHOLD_SECONDS", "1"}});
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  std::atomic<bool> waiting = false, done = false;
  HttpReply last;
  std::chrono::steady_clock::time_point answered;
  std::thread sender([&] {
    HttpClient c;
    for (int i = 0; i < 500; ++i) {
      waiting = true;
      last = c.request("POST", base + "/ingest", fmt::format(R"({{"id":{},"pad":"{}"}})", i, std::string(100, 'x')),
                       kAuth, 30000);
      answered = std::chrono::steady_clock::now();
      waiting = false;
      if (last.status != 200) break;
    }
    done = true;
  });
  // Until one request has waited 1 s: the engine no longer takes batches.
  for (int still = 0; still < 10 && !done;) {
    std::this_thread::sleep_for(100ms);
    still = waiting ? still + 1 : 0;
  }
  ASSERT_FALSE(done.load()) << last.status << " " << last.body;
  const auto term = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  sender.join();
  EXPECT_EQ(last.status, 503) << last.body;
  EXPECT_NE(last.body.find("stopping"), std::string::npos) << last.body;
  std::printf("[ metrics  ] the waiting request was answered %.1f s after SIGTERM\n",
              std::chrono::duration<double>(answered - term).count());
  const int code = wait_process(pid);
  std::printf("[ metrics  ] exit %d %.1f s after SIGTERM\n", code,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - term).count());
  kill(holder, SIGKILL);
  wait_process(holder);
}

// client_timeout_seconds is idle time: a connection that stops sending is closed, one that trickles is not (it costs
// one socket within max_connections, and no thread).
TEST(HttpServerSource, AnIdleConnectionIsClosedAfterClientTimeout) {
  const int port = free_loopback_port();
  PipelineFixture f(http_server_config(port, ", client_timeout_seconds: 2"));
  const std::string base = fmt::format("http://127.0.0.1:{}", port);
  const int pid = spawn_sync(f, "ingest");
  ASSERT_TRUE(wait_for_http(base + "/healthz", 20)) << read_text(f.path("spawned.err"));
  const int idle = connect_loopback(port);
  send(idle, "POST /ingest HTTP/1.1\r\nHo", 27, MSG_NOSIGNAL);
  Tricklers trickling(port, 1, kSlowHead);
  EXPECT_FALSE(closed_by_server(idle, 1000));
  EXPECT_TRUE(closed_by_server(idle, 4000)) << "an idle connection was kept past client_timeout_seconds";
  EXPECT_EQ(trickling.still_open(), 1);
  close(idle);
  EXPECT_EQ(stop_and_wait(pid), 0) << read_text(f.path("spawned.err"));
}

}  // namespace
}  // namespace skippr::test
