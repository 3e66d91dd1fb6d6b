#include "support/redshift_emulator.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace skippr::test {

RedshiftEmulator::RedshiftEmulator(const PostgresServer& server, const std::map<std::string, std::string>& aws_env,
                                   int drop_commit_every, const std::string& cluster_region) {
  // The python3 that has boto3 (the image's, beside moto), as for moto_server.
  const std::string python = program_path("python3");
  const std::string s3_endpoint = aws_env.count("AWS_ENDPOINT_URL") ? aws_env.at("AWS_ENDPOINT_URL") : "";
  const auto port_file = dir_ / "port";
  pid_ =
      spawn_process({python, std::string(SKIPPR_SOURCE_DIR) + "/tests/support/redshift_emulator.py", "--upstream-port",
                     std::to_string(server.port()), "--s3-endpoint", s3_endpoint, "--port-file", port_file.string(),
                     "--drop-commit-every", std::to_string(drop_commit_every), "--cluster-region", cluster_region},
                    dir_.path(), aws_env);
  for (int i = 0; i < 300 && port_ == 0; ++i) {
    std::error_code ec;
    if (std::filesystem::exists(port_file, ec)) port_ = std::stoi(read_text(port_file));
    if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (port_ == 0) throw std::runtime_error("the Redshift emulator did not start: " + read_text(dir_ / "spawned.err"));
}

RedshiftEmulator::~RedshiftEmulator() {
  kill(pid_, SIGTERM);
  wait_process(pid_);
}

int RedshiftEmulator::dropped_commits() const {
  std::istringstream lines(read_text(dir_ / "spawned.err"));
  int n = 0;
  for (std::string line; std::getline(lines, line);) n += line.starts_with("dropped the answer to COMMIT") ? 1 : 0;
  return n;
}

}  // namespace skippr::test
