// Test support: tests/support/gcs_emulator.py, an emulator of the Cloud Storage JSON API subset skipprd calls (its
// OAuth token endpoint checks the JWT's RS256 signature), on a free loopback port, one per test binary, stopped when
// the binary's tests end. No GCS server runs here; the emulator is written to Google's published API. The support
// makes an RSA key with the openssl CLI and a service-account JSON key whose token_uri is the emulator's, and reads
// and writes objects with an admin bearer token, independently of skipprd's client.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/process.h"

namespace skippr::test {

class GcsEmulator {
 public:
  // `token_ttl_seconds`: the expires_in of the tokens it issues (they are refused after it).
  explicit GcsEmulator(int token_ttl_seconds = 3600);
  ~GcsEmulator();
  GcsEmulator(const GcsEmulator&) = delete;
  GcsEmulator& operator=(const GcsEmulator&) = delete;

  std::string endpoint() const;  // http://127.0.0.1:<port>
  // The service account's JSON key (its token_uri is the emulator's).
  std::filesystem::path credentials_file() const { return dir_ / "service-account.json"; }
  // The same account with another RSA key: the token endpoint refuses its JWTs.
  std::filesystem::path other_key_credentials_file() const { return dir_ / "other-key.json"; }
  // What must never be in skipprd's output or files: lines of both private keys, and every token issued so far.
  std::vector<std::string> secrets() const;
  // GOOGLE_APPLICATION_CREDENTIALS and STORAGE_EMULATOR_HOST for skipprd.
  std::map<std::string, std::string> env() const;

  // A fresh bucket (unique per call).
  std::string create_bucket(const std::string& prefix = "b");
  // The names under `prefix`, sorted.
  std::vector<std::string> names(const std::string& bucket, const std::string& prefix = "") const;
  // Every object under `prefix` downloaded into `dir` (as dir/<name>); returns the names, sorted.
  std::vector<std::string> download(const std::string& bucket, const std::string& prefix,
                                    const std::filesystem::path& dir) const;
  // Every file under `dir` uploaded as prefix + its relative path.
  void upload(const std::filesystem::path& dir, const std::string& bucket, const std::string& prefix) const;
  void put(const std::string& bucket, const std::string& name, const std::string& bytes) const;
  std::string get(const std::string& bucket, const std::string& name) const;
  std::string generation(const std::string& bucket, const std::string& name) const;
  // The n-th next upload is stored and its answer lost (the connection closes): an unknown outcome.
  void drop_after_insert(int n) const;
  // uploads, precondition_failed, dropped, tokens_issued, tokens_refused, unauthorized, resumable_sessions, chunks.
  nlohmann::json stats() const;

 private:
  nlohmann::json call(const std::string& method, const std::string& path, const std::string& body = "",
                      const std::string& content_type = "application/json") const;

  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
  int buckets_ = 0;
  std::string admin_token_;
  std::vector<std::string> key_lines_;
};

GcsEmulator& SharedGcs();

}  // namespace skippr::test
