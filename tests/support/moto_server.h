// Test support: moto_server (moto 5.2.1, the image's Python), a real S3 (and DynamoDB, Glue) API on a free loopback
// port, one per test binary, stopped when the binary's tests end. It honours If-None-Match on PutObject (412).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "support/process.h"

namespace skippr::test {

class MotoServer {
 public:
  // `server_env`: e.g. {{"INITIAL_NO_AUTH_ACTION_COUNT", "4"}}: after that many requests it checks signatures.
  explicit MotoServer(std::map<std::string, std::string> server_env = {});
  ~MotoServer();
  MotoServer(const MotoServer&) = delete;
  MotoServer& operator=(const MotoServer&) = delete;

  std::string endpoint() const;  // http://127.0.0.1:<port>
  // A fresh bucket (unique per call).
  std::string create_bucket(const std::string& prefix = "b");
  // The environment for skipprd and for the aws CLI against this server (dummy credentials, region).
  std::map<std::string, std::string> env() const;
  // Every object under `prefix` downloaded into `dir` (aws s3 cp --recursive); returns the keys, sorted.
  std::vector<std::string> download(const std::string& bucket, const std::string& prefix,
                                    const std::filesystem::path& dir) const;
  // Every file under `dir` uploaded under `prefix` (aws s3 cp --recursive): keys are prefix + the relative path.
  void upload(const std::filesystem::path& dir, const std::string& bucket, const std::string& prefix) const;
  std::vector<std::string> keys(const std::string& bucket, const std::string& prefix = "") const;
  // The object's ETag as S3 reports it (a multipart upload's ends in -<parts>).
  std::string etag(const std::string& bucket, const std::string& key) const;
  // An IAM user allowed everything and its access key (id, secret), and a bucket it creates: on a server that checks
  // signatures, so a request signed wrongly is refused. Takes three of the unauthenticated actions.
  struct User {
    std::string key_id, secret, bucket;
  };
  User create_user_and_bucket() const;

 private:
  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
  int buckets_ = 0;
};

MotoServer& SharedMoto();

}  // namespace skippr::test
