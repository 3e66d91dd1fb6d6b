// Test support: Azurite (the Azure Storage emulator, npm azurite 3.35.0 in third_party/azurite, installed by
// scripts/install-deps.sh), its blob service on a free loopback port, one per test binary, stopped when the binary's
// tests end. It checks Shared Key and SAS signatures against the well-known dev account, and answers a write with
// If-None-Match: * onto an existing blob with 409 BlobAlreadyExists.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "clients/azure/blob_client.h"
#include "support/process.h"

namespace skippr::test {

class AzuriteServer {
 public:
  static constexpr const char* kAccount = "devstoreaccount1";
  // Azurite's published development key (not a secret anywhere).
  static constexpr const char* kKey =
      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

  AzuriteServer();
  ~AzuriteServer();
  AzuriteServer(const AzuriteServer&) = delete;
  AzuriteServer& operator=(const AzuriteServer&) = delete;

  std::string endpoint() const;  // http://127.0.0.1:<port>/devstoreaccount1
  std::string connection_string() const;
  // An account SAS (blob service, every resource type, read/write/delete/list/add/create) valid for a day, signed
  // here with OpenSSL, independently of skipprd's client.
  std::string sas_token() const;
  // A fresh container (unique per call); `public_read`: anyone may read its blobs without credentials.
  std::string create_container(const std::string& prefix = "c", bool public_read = false);
  // The committed blobs under `prefix`, sorted; with `uncommitted`, also names holding only staged blocks.
  std::vector<std::string> names(const std::string& container, const std::string& prefix = "",
                                 bool uncommitted = false) const;
  // Every blob under `prefix` downloaded into `dir` (as dir/<name>); returns the names, sorted.
  std::vector<std::string> download(const std::string& container, const std::string& prefix,
                                    const std::filesystem::path& dir) const;
  // A blob's bytes by a plain unauthenticated GET (its container must be public_read): proof that does not go
  // through skipprd's signing.
  std::string public_get(const std::string& container, const std::string& name) const;
  // Every file under `dir` stored as blob prefix + its relative path, replacing what is there (a plain Put Blob).
  void upload(const std::filesystem::path& dir, const std::string& container, const std::string& prefix) const;
  // A client with the account key (for listings and reads).
  BlobClient client() const;

 private:
  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
  int containers_ = 0;
};

AzuriteServer& SharedAzurite();

}  // namespace skippr::test
