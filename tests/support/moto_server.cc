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

MotoServer::MotoServer(std::map<std::string, std::string> server_env) {
  port_ = free_loopback_port();
  pid_ = spawn_process({program_path("moto_server"), "-H", "127.0.0.1", "-p", std::to_string(port_)}, dir_.path(),
                       server_env);
  for (int i = 0; i < 300; ++i) {
    HttpRequest probe;
    probe.url = endpoint() + "/moto-api/";
    probe.timeout_seconds = 1;
    if (auto r = http_send(probe); r && r->status > 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("moto_server did not start: " + read_text(dir_ / "spawned.err"));
}

MotoServer::~MotoServer() {
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

std::string MotoServer::endpoint() const { return fmt::format("http://127.0.0.1:{}", port_); }

std::string MotoServer::create_bucket(const std::string& prefix) {
  const std::string name = fmt::format("{}-{}", prefix, ++buckets_);
  HttpRequest put;
  put.method = "PUT";
  put.url = endpoint() + "/" + name;
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

MotoServer::User MotoServer::create_user_and_bucket() const {
  // boto3 (in the image beside moto) signs the set-up calls; the server counts them as unauthenticated actions.
  const std::string script = R"(
import boto3, json, sys
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **kw)
iam.create_user(UserName="skippr")
key = iam.create_access_key(UserName="skippr")["AccessKey"]
iam.put_user_policy(UserName="skippr", PolicyName="all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=key["AccessKeyId"],
             aws_secret_access_key=key["SecretAccessKey"]).create_bucket(Bucket="signed")
print(key["AccessKeyId"], key["SecretAccessKey"])
)";
  auto r = run_process({program_path("python3"), "-c", script, endpoint()}, dir_.path(), {}, 120);
  std::istringstream words(r.out);
  User user;
  words >> user.key_id >> user.secret;
  if (r.exit_code != 0 || user.secret.empty()) throw std::runtime_error("cannot create the IAM user: " + r.err);
  user.bucket = "signed";
  return user;
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
