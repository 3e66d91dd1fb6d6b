// Test support: run the real skipprd binary in a temp folder with a chosen environment, and read what it printed.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace skippr::test {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed, as a shell reports it (SIGKILL = 137)
  std::string out;
  std::string err;
};

// Runs `args` (args[0] = program) in `cwd` with the current environment plus `env` (an empty value unsets).
ProcessResult run_process(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                          const std::map<std::string, std::string>& env = {}, double timeout_seconds = 600);

// Starts a process without waiting; returns its pid. stdout/stderr go to files in cwd.
int spawn_process(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                  const std::map<std::string, std::string>& env = {});
int wait_process(int pid);

// A fresh temporary directory, removed when the object dies (kept when SKIPPR_KEEP_TEST_DIRS is set).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void write_text(const std::filesystem::path& file, const std::string& text);
std::string read_text(const std::filesystem::path& file);
// Runs `args` in `cwd` (60 s at most); throws with its output when it does not exit 0.
void run_or_throw(const std::vector<std::string>& args, const std::filesystem::path& cwd);
// The full path of `name` on PATH (spawn_process and run_process take a path); throws when absent.
std::string program_path(const std::string& name);

// `args` to run as the system user `user` (a server package's own, e.g. clickhouse), with `dir` and everything in it
// given to that user, when we are root; `args` as they are otherwise. Throws when the user does not exist.
std::vector<std::string> as_service_user(const std::string& user, const std::filesystem::path& dir,
                                         std::vector<std::string> args);

// A TCP port on 127.0.0.1 that was free a moment ago (for a server a test starts).
int free_loopback_port();

// Another process listening on 127.0.0.1:`port` while this lives (a taken port, as a server of someone else's).
// `dir` receives its marker file.
class PortHolder {
 public:
  PortHolder(int port, const std::filesystem::path& dir);
  ~PortHolder();
  PortHolder(const PortHolder&) = delete;
  PortHolder& operator=(const PortHolder&) = delete;

 private:
  int pid_ = 0;
};

// Every file under `dir` (recursively) that contains `needle`: where a secret must not be.
std::vector<std::string> files_containing(const std::filesystem::path& dir, const std::string& needle);

}  // namespace skippr::test
