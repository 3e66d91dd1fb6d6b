// Test helpers for the streaming sources: a small libcurl client, and starting skipprd in the
// background against a PipelineFixture (so a test can SIGKILL and restart it).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "support/pipeline_fixture.h"

namespace skippr::test {

struct HttpReply {
  long status = 0;  // 0 = no HTTP answer (refused, reset, timed out)
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

// One reusable connection per object (keep-alive), like a real client; not thread-safe, use one per thread.
class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  HttpReply request(const std::string& method, const std::string& url, const std::string& body = "",
                    const std::vector<std::string>& headers = {}, long timeout_ms = 15000);

 private:
  void* curl_;
};

// skipprd sync --pipeline <pipeline> in the fixture's folder, not waited for; returns the pid.
int spawn_sync(const PipelineFixture& f, const std::string& pipeline, std::map<std::string, std::string> env = {},
               const std::vector<std::string>& extra_args = {});

// Polls GET url until it answers 200 (true) or `seconds` pass (false).
bool wait_for_http(const std::string& url, double seconds);

}  // namespace skippr::test
