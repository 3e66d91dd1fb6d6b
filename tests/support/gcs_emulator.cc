#include "support/gcs_emulator.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/rand.h>
#include <signal.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "clients/http/http_request.h"
#include "support/test_keys.h"

namespace skippr::test {
namespace {

constexpr const char* kClientEmail = "skippr-test@emulated-project.iam.gserviceaccount.com";

void write_service_account(const std::filesystem::path& file, const std::string& key, const std::string& token_uri) {
  const nlohmann::json sa = {
      {"type", "service_account"}, {"project_id", "emulated-project"}, {"private_key_id", "0123456789abcdef"},
      {"private_key", key},        {"client_email", kClientEmail},     {"client_id", "1"},
      {"token_uri", token_uri}};
  write_text(file, sa.dump(2));
}

std::string random_hex(int bytes) {
  std::vector<unsigned char> raw(static_cast<size_t>(bytes));
  RAND_bytes(raw.data(), bytes);
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace

GcsEmulator::GcsEmulator(int token_ttl_seconds) {
  port_ = free_loopback_port();
  admin_token_ = "admin-" + random_hex(16);
  const std::string token_uri = endpoint() + "/token";
  for (const char* name : {"key", "other"}) {
    const std::string pem = make_rsa_key(dir_.path(), name);
    std::istringstream lines(pem);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("-----") && line.size() >= 40) key_lines_.push_back(line);
    }
    write_service_account(std::string(name) == "key" ? credentials_file() : other_key_credentials_file(), pem,
                          token_uri);
  }
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : program_path("python3");
  pid_ = spawn_process(
      {python, std::string(SKIPPR_SOURCE_DIR) + "/tests/support/gcs_emulator.py", "--port", std::to_string(port_),
       "--root", (dir_ / "storage").string(), "--public-key", (dir_ / "key.pub").string(), "--client-email",
       kClientEmail, "--admin-token", admin_token_, "--token-ttl", std::to_string(token_ttl_seconds)},
      dir_.path());
  for (int i = 0; i < 300; ++i) {
    HttpRequest probe;
    probe.url = endpoint() + "/_emulator/stats";
    probe.timeout_seconds = 1;
    if (auto r = http_send(probe); r && r->status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("the GCS emulator did not start: " + read_text(dir_ / "spawned.err"));
}

GcsEmulator::~GcsEmulator() {
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

std::string GcsEmulator::endpoint() const { return fmt::format("http://127.0.0.1:{}", port_); }

std::map<std::string, std::string> GcsEmulator::env() const {
  return {{"GOOGLE_APPLICATION_CREDENTIALS", credentials_file().string()}, {"STORAGE_EMULATOR_HOST", endpoint()}};
}

std::vector<std::string> GcsEmulator::secrets() const {
  std::vector<std::string> out = key_lines_;
  for (const auto& token : call("GET", "/_emulator/tokens")["tokens"]) out.push_back(token.get<std::string>());
  return out;
}

nlohmann::json GcsEmulator::call(const std::string& method, const std::string& path, const std::string& body,
                                 const std::string& content_type) const {
  HttpRequest r;
  r.method = method;
  r.url = endpoint() + path;
  r.body = body;
  r.headers = {"Authorization: Bearer " + admin_token_, "Content-Type: " + content_type};
  auto response = http_send(r);
  if (!response || response->status >= 300) {
    throw std::runtime_error(
        fmt::format("GCS emulator {} {}: {}", method, path,
                    response ? fmt::format("HTTP {} {}", response->status, response->body) : response.error().message));
  }
  if (response->body.empty()) return nlohmann::json::object();
  return nlohmann::json::parse(response->body);
}

std::string GcsEmulator::create_bucket(const std::string& prefix) {
  const std::string name = fmt::format("{}-{}", prefix, ++buckets_);
  call("POST", "/storage/v1/b?project=emulated-project", nlohmann::json{{"name", name}}.dump());
  return name;
}

std::vector<std::string> GcsEmulator::names(const std::string& bucket, const std::string& prefix) const {
  std::vector<std::string> out;
  std::string token;
  do {
    auto page = call("GET", fmt::format("/storage/v1/b/{}/o?prefix={}{}", bucket, url_encode(prefix),
                                        token.empty() ? "" : "&pageToken=" + url_encode(token)));
    for (const auto& item : page.value("items", nlohmann::json::array())) out.push_back(item["name"]);
    token = page.value("nextPageToken", std::string());
  } while (!token.empty());
  std::sort(out.begin(), out.end());
  return out;
}

std::string GcsEmulator::get(const std::string& bucket, const std::string& name) const {
  HttpRequest r;
  r.url = fmt::format("{}/storage/v1/b/{}/o/{}?alt=media", endpoint(), bucket, url_encode(name));
  r.headers = {"Authorization: Bearer " + admin_token_};
  auto response = http_send(r);
  if (!response || response->status != 200) throw std::runtime_error("GCS emulator: cannot read " + name);
  return std::move(response->body);
}

std::string GcsEmulator::generation(const std::string& bucket, const std::string& name) const {
  return call("GET", fmt::format("/storage/v1/b/{}/o/{}", bucket, url_encode(name)))["generation"];
}

std::vector<std::string> GcsEmulator::download(const std::string& bucket, const std::string& prefix,
                                               const std::filesystem::path& dir) const {
  const auto all = names(bucket, prefix);
  for (const auto& name : all) {
    const std::filesystem::path file = dir / name;
    std::filesystem::create_directories(file.parent_path());
    write_text(file, get(bucket, name));
  }
  return all;
}

void GcsEmulator::put(const std::string& bucket, const std::string& name, const std::string& bytes) const {
  call("POST", fmt::format("/upload/storage/v1/b/{}/o?uploadType=media&name={}", bucket, url_encode(name)), bytes,
       "application/octet-stream");
}

void GcsEmulator::upload(const std::filesystem::path& dir, const std::string& bucket, const std::string& prefix) const {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    put(bucket, prefix + entry.path().lexically_relative(dir).generic_string(), read_text(entry.path()));
  }
}

void GcsEmulator::drop_after_insert(int n) const {
  call("POST", "/_emulator/faults", nlohmann::json{{"drop_after_insert", n}}.dump());
}

nlohmann::json GcsEmulator::stats() const { return call("GET", "/_emulator/stats"); }

namespace {
GcsEmulator* shared_gcs = nullptr;
class SharedGcsEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    delete shared_gcs;
    shared_gcs = nullptr;
  }
};
}  // namespace

GcsEmulator& SharedGcs() {
  if (!shared_gcs) {
    shared_gcs = new GcsEmulator();
    ::testing::AddGlobalTestEnvironment(new SharedGcsEnvironment);
  }
  return *shared_gcs;
}

}  // namespace skippr::test
