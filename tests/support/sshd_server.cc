#include "support/sshd_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

namespace skippr::test {
namespace {

std::string random_hex(size_t n) {
  std::random_device rd;
  std::string out;
  for (size_t i = 0; i < n; ++i) out += "0123456789abcdef"[rd() % 16];
  return out;
}

// The test user, made once per machine (tests run as root: sshd will not let root in). Its password is random, kept
// in a file only root can read, so every test binary on the machine uses the same one and none guesses it.
std::string ensure_user_and_password(const std::filesystem::path& cwd) {
  const std::string user = SshdServer::user();
  const bool created = !getpwnam(user.c_str());
  if (created) {
    if (geteuid() != 0) throw std::runtime_error("the SFTP tests need root to create the user " + user);
    run_or_throw({program_path("useradd"), "-m", "-s", "/bin/sh", user}, cwd);
  }
  const std::filesystem::path file = "/var/lib/skippr-test/sftp-password";
  std::string password;
  if (std::filesystem::exists(file)) password = read_text(file);
  if (created || password.empty()) {
    if (password.empty()) password = random_hex(24);
    std::filesystem::create_directories(file.parent_path());
    write_text(file, "");  // root-only before the password goes in
    std::filesystem::permissions(file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    write_text(file, password);
    // chpasswd hashes it; with UsePAM no, sshd checks /etc/shadow, where a set password also unlocks key login.
    run_or_throw({program_path("sh"), "-c", fmt::format("echo '{}:{}' | chpasswd", user, password)}, cwd);
  }
  return password;
}

bool accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

std::string public_key_line(const std::filesystem::path& pub) {
  std::string line = read_text(pub);
  line = line.substr(0, line.find_last_not_of("\n") + 1);
  return line.substr(0, line.rfind(' '));  // "ssh-ed25519 AAAA...", without the comment
}

}  // namespace

SshdServer::SshdServer() {
  password_ = ensure_user_and_password(dir_.path());
  // The user reads its authorized_keys (sshd drops to it for that) and writes its upload folders in here.
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                                std::filesystem::perms::group_exec |
                                                std::filesystem::perms::others_read |
                                                std::filesystem::perms::others_exec);
  std::filesystem::create_directories("/run/sshd");  // sshd's privilege separation folder (gone after a reboot)
  const std::string keygen = program_path("ssh-keygen");
  for (const char* key : {"host_key", "client_key", "other_key", "other_host_key"}) {
    run_or_throw({keygen, "-q", "-t", "ed25519", "-N", "", "-C", key, "-f", (dir_ / key).string()}, dir_.path());
  }
  write_text(dir_ / "authorized_keys", read_text(dir_ / "client_key.pub"));
  port_ = free_loopback_port();
  write_text(known_hosts(), fmt::format("[127.0.0.1]:{} {}\n", port_, public_key_line(dir_ / "host_key.pub")));
  write_text(wrong_known_hosts(),
             fmt::format("[127.0.0.1]:{} {}\n", port_, public_key_line(dir_ / "other_host_key.pub")));
  write_text(dir_ / "sshd_config",
             fmt::format(R"(ListenAddress 127.0.0.1:{port}
HostKey {dir}/host_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
AllowUsers {user}
StrictModes no
UsePAM no
PermitRootLogin no
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
Subsystem sftp internal-sftp
ForceCommand internal-sftp
)",
                         fmt::arg("port", port_), fmt::arg("dir", dir_.path().string()), fmt::arg("user", user())));
  pid_ = spawn_process({"/usr/sbin/sshd", "-D", "-e", "-f", (dir_ / "sshd_config").string()}, dir_.path());
  for (int i = 0; i < 200; ++i) {
    if (accepts(port_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGTERM);
  wait_process(pid_);
  throw std::runtime_error("sshd did not start: " + read_text(dir_ / "spawned.err"));
}

SshdServer::~SshdServer() {
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

std::filesystem::path SshdServer::upload_folder(const std::string& prefix) {
  const auto folder = dir_ / fmt::format("{}-{}", prefix, ++folders_);
  std::filesystem::create_directories(folder);
  give_to_user(folder);
  return folder;
}

void SshdServer::give_to_user(const std::filesystem::path& path) const {
  const passwd* pw = getpwnam(user());
  if (!pw || chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
    throw std::runtime_error("cannot give " + path.string() + " to " + user());
  }
}

std::filesystem::path SshdServer::read_only_folder() {
  const auto folder = dir_ / fmt::format("ro-{}", ++folders_);
  std::filesystem::create_directories(folder);  // root's, 0755
  return folder;
}

namespace {
SshdServer* shared_sshd = nullptr;
class SharedSshdEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    delete shared_sshd;
    shared_sshd = nullptr;
  }
};
}  // namespace

SshdServer& SharedSshd() {
  if (!shared_sshd) {
    shared_sshd = new SshdServer();
    ::testing::AddGlobalTestEnvironment(new SharedSshdEnvironment);
  }
  return *shared_sshd;
}

}  // namespace skippr::test
