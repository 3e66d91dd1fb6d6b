#include "support/azurite_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <signal.h>

#include <ctime>
#include <stdexcept>
#include <thread>

#include "clients/http/http_request.h"

namespace skippr::test {
namespace {

std::string base64(const unsigned char* data, size_t size) {
  std::string out(4 * ((size + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string unbase64(const std::string& text) {
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --n;
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string iso8601(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

template <class T>
T must(Result<T> r) {
  if (!r) throw std::runtime_error(r.error().message);
  return std::move(*r);
}

}  // namespace

AzuriteServer::AzuriteServer() {
  port_ = free_loopback_port();
  const std::string program = std::string(SKIPPR_SOURCE_DIR) + "/third_party/azurite/node_modules/.bin/azurite-blob";
  if (!std::filesystem::exists(program)) {
    throw std::runtime_error(program + " is missing: run scripts/install-deps.sh");
  }
  std::filesystem::create_directories(dir_ / "data");
  pid_ = spawn_process({program, "--blobHost", "127.0.0.1", "--blobPort", std::to_string(port_), "--location",
                        (dir_ / "data").string(), "--silent", "--disableTelemetry"},
                       dir_.path());
  for (int i = 0; i < 300; ++i) {
    HttpRequest probe;
    probe.url = endpoint() + "?comp=list";
    probe.timeout_seconds = 1;
    if (auto r = http_send(probe); r && r->status > 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("azurite did not start: " + read_text(dir_ / "spawned.err"));
}

AzuriteServer::~AzuriteServer() {
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

std::string AzuriteServer::endpoint() const { return fmt::format("http://127.0.0.1:{}/{}", port_, kAccount); }

std::string AzuriteServer::connection_string() const {
  return fmt::format("DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={};", kAccount, kKey,
                     endpoint());
}

std::string AzuriteServer::sas_token() const {
  const std::string permissions = "rwdlac", services = "b", types = "sco", version = "2021-12-02";
  const std::string expiry = iso8601(std::time(nullptr) + 86400);
  // The account SAS string-to-sign of version 2020-12-06 and later (its last field: the encryption scope).
  const std::string text =
      fmt::format("{}\n{}\n{}\n{}\n\n{}\n\n\n{}\n\n", kAccount, permissions, services, types, expiry, version);
  const std::string key = unbase64(kKey);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac, &length);
  return fmt::format("sv={}&ss={}&srt={}&sp={}&se={}&sig={}", version, services, types, permissions, url_encode(expiry),
                     url_encode(base64(mac, length)));
}

BlobClient AzuriteServer::client() const {
  AzureOptions o;
  o.account = kAccount;
  o.account_key = kKey;
  o.endpoint = endpoint();
  return BlobClient(must(resolve_azure_account(o, "azurite")));
}

void AzuriteServer::upload(const std::filesystem::path& dir, const std::string& container,
                           const std::string& prefix) const {
  const AzureAccount account = client().account();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string body = read_text(entry.path());
    AzureRequest put;
    put.method = "PUT";
    put.path = "/" + container + "/" +
               url_encode(prefix + entry.path().lexically_relative(dir).generic_string(), /*keep_slash=*/true);
    put.headers = {{"Content-Type", "application/octet-stream"}, {"x-ms-blob-type", "BlockBlob"}};
    put.body = body;
    auto r = http_send(azure_authorize(account, put));
    if (!r || r->status != 201) {
      throw std::runtime_error(fmt::format("Put Blob {} failed: {}", put.path, r ? r->body : r.error().message));
    }
  }
}

std::string AzuriteServer::create_container(const std::string& prefix, bool public_read) {
  const std::string name = fmt::format("{}-{}", prefix, ++containers_);
  if (auto r = client().create_container(name, public_read); !r) throw std::runtime_error(r.error().message);
  return name;
}

std::vector<std::string> AzuriteServer::names(const std::string& container, const std::string& prefix,
                                              bool uncommitted) const {
  auto names = must(client().list_blobs(container, prefix, uncommitted));
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> AzuriteServer::download(const std::string& container, const std::string& prefix,
                                                 const std::filesystem::path& dir) const {
  auto c = client();
  const auto all = names(container, prefix);
  for (const auto& name : all) {
    const std::filesystem::path file = dir / name;
    std::filesystem::create_directories(file.parent_path());
    write_text(file, must(c.get_blob(container, name)));
  }
  return all;
}

std::string AzuriteServer::public_get(const std::string& container, const std::string& name) const {
  HttpRequest get;
  get.url = fmt::format("{}/{}/{}", endpoint(), container, url_encode(name, /*keep_slash=*/true));
  auto r = http_send(get);
  if (!r || r->status != 200) {
    throw std::runtime_error(
        fmt::format("public GET {} failed: {}", get.url, r ? std::to_string(r->status) : r.error().message));
  }
  return std::move(r->body);
}

namespace {
AzuriteServer* shared_azurite = nullptr;
class SharedAzuriteEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    delete shared_azurite;
    shared_azurite = nullptr;
  }
};
}  // namespace

AzuriteServer& SharedAzurite() {
  if (!shared_azurite) {
    shared_azurite = new AzuriteServer();
    ::testing::AddGlobalTestEnvironment(new SharedAzuriteEnvironment);
  }
  return *shared_azurite;
}

}  // namespace skippr::test
