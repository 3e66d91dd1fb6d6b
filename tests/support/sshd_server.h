// Test support: a private OpenSSH sshd (Debian's openssh-server) on a free loopback port, one per test binary, with
// its own ed25519 host key, SFTP only (ForceCommand internal-sftp) and one non-root user: key login with the client
// key made here, and password login with a random password made once per machine. Files the sink wrote are read
// straight from the local folder sshd wrote them to.
#pragma once

#include <filesystem>
#include <string>

#include "support/process.h"

namespace skippr::test {

class SshdServer {
 public:
  SshdServer();
  ~SshdServer();
  SshdServer(const SshdServer&) = delete;
  SshdServer& operator=(const SshdServer&) = delete;

  int port() const { return port_; }
  static const char* user() { return "skippr-sftp"; }
  std::string password() const { return password_; }
  // "[127.0.0.1]:PORT ssh-ed25519 ..." for this server's host key.
  std::filesystem::path known_hosts() const { return dir_ / "known_hosts"; }
  // The same host name and port with another server's key: what a man in the middle would show.
  std::filesystem::path wrong_known_hosts() const { return dir_ / "wrong_known_hosts"; }
  std::filesystem::path client_key() const { return dir_ / "client_key"; }
  std::filesystem::path unauthorized_key() const { return dir_ / "other_key"; }
  // A fresh folder the test user may write to (unique per call), as an absolute path that is the same locally and
  // on the server.
  std::filesystem::path upload_folder(const std::string& prefix = "up");
  // Makes the test user own `path`: as if it had written it over SFTP.
  void give_to_user(const std::filesystem::path& path) const;
  // A folder owned by root that the test user can read but not write.
  std::filesystem::path read_only_folder();

 private:
  TempDir dir_;
  int port_ = 0;
  int pid_ = 0;
  int folders_ = 0;
  std::string password_;
  std::string saved_password_hash_;
};

SshdServer& SharedSshd();

}  // namespace skippr::test
