#include "support/fault_proxy.h"

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "clients/http/http_request.h"

namespace skippr::test {

namespace {
std::filesystem::path script_path() {
#ifdef SKIPPR_SOURCE_DIR
  return std::filesystem::path(SKIPPR_SOURCE_DIR) / "tests/support/fault_proxy.py";
#else
  return std::filesystem::path(__FILE__).parent_path() / "fault_proxy.py";
#endif
}
}  // namespace

FaultProxy::FaultProxy(std::string upstream) {
  const auto port_file = dir_ / "port";
  // program_path("python3") can find a pyenv shim; the system Python is enough for a stdlib-only script.
  pid_ = spawn_process(
      {"/usr/bin/python3", script_path().string(), "--upstream", upstream, "--port-file", port_file.string()},
      dir_.path());
  for (int i = 0; i < 300; ++i) {
    if (std::filesystem::exists(port_file)) {
      port_ = std::stoi(read_text(port_file));
      HttpRequest probe;
      probe.url = endpoint() + "/__faults";
      probe.timeout_seconds = 1;
      if (auto r = http_send(probe); r && r->status == 200) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // The destructor does not run for a constructor that throws.
  kill(pid_, SIGTERM);
  wait_process(pid_);
  throw std::runtime_error("fault_proxy.py did not start: " + read_text(dir_ / "spawned.err"));
}

FaultProxy::~FaultProxy() {
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

std::string FaultProxy::endpoint() const { return fmt::format("http://127.0.0.1:{}", port_); }

nlohmann::json FaultProxy::control(const std::string& method, const std::string& body) const {
  HttpRequest request;
  request.method = method;
  request.url = endpoint() + "/__faults";
  request.body = body;
  if (!body.empty()) request.headers.push_back("Content-Type: application/json");
  auto r = http_send(request);
  if (!r) throw std::runtime_error(fmt::format("fault proxy {}: {}", method, r.error().message));
  if (r->status != 200) throw std::runtime_error(fmt::format("fault proxy {} -> {}: {}", method, r->status, r->body));
  return nlohmann::json::parse(r->body);
}

int FaultProxy::add(const FaultRule& rule) {
  const nlohmann::json spec = {{"method", rule.method},
                               {"path_regex", rule.path_regex},
                               {"target_regex", rule.target_regex},
                               {"body_regex", rule.body_regex},
                               {"action", rule.action},
                               {"status", rule.status},
                               {"code", rule.code},
                               {"body", rule.body},
                               {"delay_seconds", rule.delay_seconds},
                               {"skip", rule.skip},
                               {"times", rule.times}};
  return control("POST", spec.dump()).at("id").get<int>();
}

void FaultProxy::clear() { control("DELETE"); }

int FaultProxy::hits(int rule_id) const {
  const nlohmann::json state = control("GET");  // kept alive: a range-for over a temporary's member would dangle
  for (const auto& rule : state.at("rules")) {
    if (rule.at("id").get<int>() == rule_id) return rule.at("hits").get<int>();
  }
  throw std::runtime_error(fmt::format("fault proxy: no rule {} in {}", rule_id, state.dump()));
}

uint64_t FaultProxy::requests() const { return control("GET").at("requests").get<uint64_t>(); }

}  // namespace skippr::test
