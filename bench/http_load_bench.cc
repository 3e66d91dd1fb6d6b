// A load client for the HttpServer source: N threads, each one keep-alive connection that POSTs the same body and
// waits for each answer before the next, for a number of seconds. Prints requests per second and latencies. In C++
// (libcurl) rather than Python, because a Python client's own cost per request (~0.4 ms) is above the disk's flush
// time this bench compares against.
//   http_load_bench URL TOKEN CLIENTS SECONDS RECORDS_PER_REQUEST
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

size_t discard(char*, size_t size, size_t count, void*) { return size * count; }

struct ClientFigures {
  std::vector<double> latencies_ms;
  uint64_t refused = 0;  // 503 and other non-200 answers
  uint64_t failed = 0;   // transport errors (the connection is reopened)
};

ClientFigures run_client(const std::string& url, const std::string& body, curl_slist* headers, Clock::time_point stop) {
  ClientFigures figures;
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  while (Clock::now() < stop) {
    const auto begin = Clock::now();
    if (curl_easy_perform(curl) != CURLE_OK) {
      ++figures.failed;
      continue;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
      ++figures.refused;
      continue;
    }
    figures.latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
  }
  curl_easy_cleanup(curl);
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    fmt::print(stderr, "usage: http_load_bench URL TOKEN CLIENTS SECONDS RECORDS_PER_REQUEST\n");
    return 2;
  }
  const std::string url = argv[1];
  const std::string token = argv[2];
  const int clients = std::stoi(argv[3]);
  const double seconds = std::stod(argv[4]);
  const int records = std::stoi(argv[5]);

  std::string body;
  for (int i = 0; i < records; ++i) {
    body += fmt::format("{{\"id\": {}, \"payload\": \"{}\"}}\n", i, std::string(80, 'x'));
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
  headers = curl_slist_append(headers, "Content-Type: application/x-ndjson");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip

  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<ClientFigures> figures(clients);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] { figures[c] = run_client(url, body, headers, stop); });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> all;
  uint64_t refused = 0, failed = 0;
  for (auto& f : figures) {
    all.insert(all.end(), f.latencies_ms.begin(), f.latencies_ms.end());
    refused += f.refused;
    failed += f.failed;
  }
  std::sort(all.begin(), all.end());
  if (all.empty()) {
    fmt::print("0 requests acknowledged ({} refused, {} failed)\n", refused, failed);
    return 1;
  }
  fmt::print("{:.0f} {:.2f} {:.2f} {} {}\n", all.size() / elapsed, all[all.size() / 2],
             all[std::min(all.size() - 1, all.size() * 99 / 100)], refused, failed);
  curl_slist_free_all(headers);
  curl_global_cleanup();
  return 0;
}
