#include "support/zookeeper_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace skippr::test {
namespace {

// ZooKeeper's four-letter "ruok" answers "imok" once the server serves clients.
bool answers(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && write(fd, "ruok", 4) == 4) {
    char reply[4] = {};
    ok = read(fd, reply, 4) == 4 && std::string_view(reply, 4) == "imok";
  }
  close(fd);
  return ok;
}

}  // namespace

ZooKeeperServer::ZooKeeperServer() {
  port_ = free_loopback_port();
  const std::string dir = dir_.path().string();
  std::filesystem::create_directories(dir_ / "data");
  write_text(dir_ / "zoo.cfg", "tickTime=2000\ndataDir=" + dir + "/data\nclientPort=" + std::to_string(port_) +
                                   "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                                   "4lw.commands.whitelist=ruok\n");
  std::vector<std::string> args = {"/usr/bin/env",
                                   "ZOOCFGDIR=" + dir,
                                   "ZOO_LOG_DIR=" + dir,
                                   "JMXDISABLE=true",
                                   "/usr/share/zookeeper/bin/zkServer.sh",
                                   "start-foreground",
                                   dir + "/zoo.cfg"};
  args = as_service_user("zookeeper", dir_.path(), std::move(args));
  pid_ = spawn_process(args, dir_.path());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (answers(port_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw std::runtime_error("zookeeper did not answer within 60 s; see " + dir);
}

ZooKeeperServer::~ZooKeeperServer() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGTERM);
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

}  // namespace skippr::test
