// Test support: moto_server (moto 5.2.1, the image's Python), a real S3 (and DynamoDB, Glue) API on a free loopback
// port, one per test binary, stopped when the binary's tests end. It honours If-None-Match on PutObject (412).
//
// Clients never talk to moto directly: aws_gate.py stands in front and checks what AWS checks before acting — the
// Signature V4 (computed by botocore's signer), the key, the session token and its expiry, the payload hash — and
// makes DynamoDB's conditional writes atomic (moto's are not). endpoint() is the gate's. Tests end by asserting that
// the gate refused nothing (expect_every_request_accepted), so a request signed wrongly fails the test.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "support/process.h"

namespace skippr::test {

class MotoServer {
 public:
  // `credential_seconds`: the lifetime of the keys the gate's container credentials endpoint hands out.
  explicit MotoServer(int credential_seconds = 3600);
  ~MotoServer();
  MotoServer(const MotoServer&) = delete;
  MotoServer& operator=(const MotoServer&) = delete;

  std::string endpoint() const;  // http://127.0.0.1:<port> of the gate
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
  // A new access key the gate knows (id, secret) and a fresh bucket.
  struct User {
    std::string key_id, secret, bucket;
  };
  // `without_list_bucket`: the key's policy lacks s3:ListBucket (the gate then answers 403 where S3 would).
  User create_user_and_bucket(bool without_list_bucket = false);

  // The environment for temporary credentials from the ECS/EKS container endpoint the gate serves (keys that live
  // `credential_seconds`), and without static keys.
  std::map<std::string, std::string> container_credentials_env() const;
  // What the gate saw since the start or the last reset: {"accepted": N, "refused": {code: N}, "refusals": [...],
  // "credentials_issued": N}.
  nlohmann::json gate_stats() const;
  void reset_gate_stats() const;
  // Every temporary key the gate handed out expires now (revoked, or AWS's clock ahead): how many there were.
  int expire_temporary_keys() const;
  // A test expectation: the gate refused no request (each refusal is listed in the failure).
  void expect_every_request_accepted() const;

 private:
  std::string moto_endpoint() const;  // moto itself, for the tests' own unsigned set-up calls
  nlohmann::json gate_call(const std::string& method, const std::string& what, const std::string& body = "") const;

  TempDir dir_;
  int moto_port_ = 0;
  int moto_pid_ = 0;
  int gate_port_ = 0;
  int gate_pid_ = 0;
  int buckets_ = 0;
};

MotoServer& SharedMoto();

}  // namespace skippr::test
