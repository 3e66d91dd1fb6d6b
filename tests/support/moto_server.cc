#include "support/moto_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "clients/http/http_request.h"

namespace skippr::test {

namespace {
constexpr const char* kContainerToken = "gate-container-token";

std::filesystem::path gate_script() { return std::filesystem::path(SKIPPR_SOURCE_DIR) / "tests/support/aws_gate.py"; }

bool answers(const std::string& url) {
  HttpRequest probe;
  probe.url = url;
  probe.timeout_seconds = 1;
  auto r = http_send(probe);
  return r && r->status > 0;
}
}  // namespace

MotoServer::MotoServer(int credential_seconds) {
  moto_port_ = free_loopback_port();
  moto_pid_ =
      spawn_process({program_path("moto_server"), "-H", "127.0.0.1", "-p", std::to_string(moto_port_)}, dir_.path());
  const auto port_file = dir_ / "gate.port";
  std::filesystem::create_directories(dir_ / "gate");
  // The image's python3 (pyenv's, beside moto): the gate signs with its botocore.
  gate_pid_ = spawn_process({program_path("python3"), gate_script().string(), "--upstream", moto_endpoint(),
                             "--port-file", port_file.string(), "--credential-seconds",
                             std::to_string(credential_seconds), "--container-token", kContainerToken},
                            dir_.path() / "gate");
  for (int i = 0; i < 300; ++i) {
    if (gate_port_ == 0 && std::filesystem::exists(port_file)) gate_port_ = std::stoi(read_text(port_file));
    if (gate_port_ != 0 && answers(moto_endpoint() + "/moto-api/") && answers(endpoint() + "/__gate/stats")) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string why = read_text(dir_ / "spawned.err") + read_text(dir_ / "gate" / "spawned.err");
  kill(moto_pid_, SIGTERM);
  kill(gate_pid_, SIGTERM);
  wait_process(moto_pid_);
  wait_process(gate_pid_);
  throw std::runtime_error("moto_server or aws_gate.py did not start: " + why);
}

MotoServer::~MotoServer() {
  kill(gate_pid_, SIGTERM);
  kill(moto_pid_, SIGTERM);
  wait_process(gate_pid_);
  wait_process(moto_pid_);
}

std::string MotoServer::endpoint() const { return fmt::format("http://127.0.0.1:{}", gate_port_); }
std::string MotoServer::moto_endpoint() const { return fmt::format("http://127.0.0.1:{}", moto_port_); }

nlohmann::json MotoServer::gate_call(const std::string& method, const std::string& what,
                                     const std::string& body) const {
  HttpRequest request;
  request.method = method;
  request.url = endpoint() + "/__gate/" + what;
  request.body = body;
  if (!body.empty()) request.headers.push_back("Content-Type: application/json");
  auto r = http_send(request);
  if (!r || r->status != 200) throw std::runtime_error(fmt::format("aws_gate {} {} failed", method, what));
  return nlohmann::json::parse(r->body);
}

nlohmann::json MotoServer::gate_stats() const { return gate_call("GET", "stats"); }
int MotoServer::expire_temporary_keys() const { return gate_call("POST", "expire").at("expired").get<int>(); }
void MotoServer::reset_gate_stats() const { gate_call("DELETE", "stats"); }

void MotoServer::expect_every_request_accepted() const {
  const auto stats = gate_stats();
  EXPECT_TRUE(stats.at("refused").empty()) << "the AWS gate refused requests: " << stats.dump(2);
}

std::map<std::string, std::string> MotoServer::container_credentials_env() const {
  auto e = env();
  e["AWS_ACCESS_KEY_ID"] = e["AWS_SECRET_ACCESS_KEY"] = "";  // empty is unset to the chain, and wins over a parent's
  e["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = endpoint() + "/__gate/credentials";
  e["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = kContainerToken;
  e["AWS_SHARED_CREDENTIALS_FILE"] = (dir_ / "no-credentials-file").string();
  return e;
}

std::string MotoServer::create_bucket(const std::string& prefix) {
  const std::string name = fmt::format("{}-{}", prefix, ++buckets_);
  HttpRequest put;
  put.method = "PUT";
  put.url = moto_endpoint() + "/" + name;  // the test's own set-up: unsigned, straight to moto
  auto r = http_send(put);
  if (!r || r->status != 200) throw std::runtime_error("cannot create bucket " + name);
  return name;
}

std::map<std::string, std::string> MotoServer::env() const {
  return {{"AWS_ACCESS_KEY_ID", "testing"},
          {"AWS_SECRET_ACCESS_KEY", "testing"},
          {"AWS_REGION", "us-east-1"},
          {"AWS_ENDPOINT_URL", endpoint()},
          {"AWS_EC2_METADATA_DISABLED", "true"}};
}

std::vector<std::string> MotoServer::keys(const std::string& bucket, const std::string& prefix) const {
  auto r = run_process({program_path("aws"), "s3api", "list-objects-v2", "--bucket", bucket, "--prefix", prefix,
                        "--query", "Contents[].Key", "--output", "text"},
                       dir_.path(), env(), 120);
  if (r.exit_code != 0)
    throw std::runtime_error(
        fmt::format("aws s3api list-objects-v2 failed (exit {}): {}{}", r.exit_code, r.out, r.err));
  std::vector<std::string> out;
  std::istringstream words(r.out);
  for (std::string key; words >> key;) {
    if (key != "None") out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string MotoServer::etag(const std::string& bucket, const std::string& key) const {
  auto r = run_process({program_path("aws"), "s3api", "head-object", "--bucket", bucket, "--key", key, "--query",
                        "ETag", "--output", "text"},
                       dir_.path(), env(), 120);
  if (r.exit_code != 0) throw std::runtime_error("aws s3api head-object failed: " + r.err);
  return r.out.substr(0, r.out.find_last_not_of("\n") + 1);
}

std::vector<std::string> MotoServer::download(const std::string& bucket, const std::string& prefix,
                                              const std::filesystem::path& dir) const {
  auto r = run_process({program_path("aws"), "s3", "cp", "--recursive", "--only-show-errors",
                        fmt::format("s3://{}/{}", bucket, prefix), dir.string()},
                       dir_.path(), env(), 300);
  if (r.exit_code != 0)
    throw std::runtime_error(fmt::format("aws s3 cp failed (exit {}): {}{}", r.exit_code, r.out, r.err));
  return keys(bucket, prefix);
}

void MotoServer::upload(const std::filesystem::path& dir, const std::string& bucket, const std::string& prefix) const {
  auto r = run_process({program_path("aws"), "s3", "cp", "--recursive", "--only-show-errors", dir.string(),
                        fmt::format("s3://{}/{}", bucket, prefix)},
                       dir_.path(), env(), 300);
  if (r.exit_code != 0)
    throw std::runtime_error(fmt::format("aws s3 cp failed (exit {}): {}{}", r.exit_code, r.out, r.err));
}

MotoServer::User MotoServer::create_user_and_bucket(bool without_list_bucket) {
  // A permanent key (seconds 0), as an IAM user's.
  const auto key = gate_call(
      "POST", "keys", without_list_bucket ? R"({"seconds": 0, "without_list_bucket": true})" : R"({"seconds": 0})");
  return {key.at("AccessKeyId").get<std::string>(), key.at("SecretAccessKey").get<std::string>(),
          create_bucket("signed")};
}

namespace {
MotoServer* shared_moto = nullptr;
class SharedMotoEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    delete shared_moto;
    shared_moto = nullptr;
  }
};
}  // namespace

MotoServer& SharedMoto() {
  if (!shared_moto) {
    shared_moto = new MotoServer();
    ::testing::AddGlobalTestEnvironment(new SharedMotoEnvironment);
  }
  return *shared_moto;
}

}  // namespace skippr::test
