#include "streaming/http_test_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace skippr::test {

namespace {
size_t collect_body(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}
size_t collect_header(char* data, size_t size, size_t n, void* out) {
  std::string line(data, size * n);
  if (auto colon = line.find(':'); colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
    (*static_cast<std::map<std::string, std::string>*>(out))[name] = value;
  }
  return size * n;
}
}  // namespace

HttpClient::HttpClient() : curl_(curl_easy_init()) {}
HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpReply HttpClient::request(const std::string& method, const std::string& url, const std::string& body,
                              const std::vector<std::string>& headers, long timeout_ms) {
  CURL* c = static_cast<CURL*>(curl_);
  HttpReply reply;
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply.headers);
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(list);
  return reply;
}

int spawn_sync(const PipelineFixture& f, const std::string& pipeline, std::map<std::string, std::string> env,
               const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {SKIPPRD_BINARY, "sync", "--pipeline", pipeline};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  env.emplace("DATA_DIR", (f.root() / "data").string());
  env.emplace("SKIPPR_CONFIG_FILE", "");
  return spawn_process(argv, f.root(), env);
}

bool wait_for_http(const std::string& url, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  HttpClient client;
  while (std::chrono::steady_clock::now() < deadline) {
    if (client.request("GET", url, "", {}, 1000).status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace skippr::test
