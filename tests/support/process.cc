#include "support/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace skippr::test {

namespace {

void exec_child(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                const std::map<std::string, std::string>& env, const std::string& out_file,
                const std::string& err_file) {
  if (chdir(cwd.c_str()) != 0) _exit(127);
  for (const auto& [k, v] : env) {
    if (v.empty()) {
      unsetenv(k.c_str());
    } else {
      setenv(k.c_str(), v.c_str(), 1);
    }
  }
  int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, 0);
  dup2(out, 1);
  dup2(err, 2);
  setpgid(0, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                          const std::map<std::string, std::string>& env, double timeout_seconds) {
  static int counter = 0;
  const std::string stem = (std::filesystem::temp_directory_path() /
                            ("skippr-proc-" + std::to_string(getpid()) + "-" + std::to_string(counter++)))
                               .string();
  const std::string out_file = stem + ".out", err_file = stem + ".err";
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) exec_child(args, cwd, env, out_file, err_file);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ProcessResult r;
  r.exit_code = decode_status(status);
  r.out = read_text(out_file);
  r.err = read_text(err_file);
  std::filesystem::remove(out_file);
  std::filesystem::remove(err_file);
  return r;
}

int spawn_process(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                  const std::map<std::string, std::string>& env) {
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) exec_child(args, cwd, env, (cwd / "spawned.out").string(), (cwd / "spawned.err").string());
  return pid;
}

int wait_process(int pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return decode_status(status);
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "skippr-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (std::getenv("SKIPPR_KEEP_TEST_DIRS")) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string program_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  const char* home = std::getenv("HOME");
  // The image's Python tools (moto_server, aws) live under pyenv, which a non-login shell may leave off PATH.
  std::stringstream dirs(std::string(path ? path : "") + ":" + (home ? home : "/root") + "/.pyenv/shims");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  throw std::runtime_error(name + " is not on PATH");
}

PortHolder::PortHolder(int port, const std::filesystem::path& dir) {
  const auto bound = dir / fmt::format("port-{}-held", port);
  pid_ = spawn_process({"/usr/bin/python3", "-c",
                        fmt::format("import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',{}))\ns.listen()\n"
                                    "open('{}','w').close()\ntime.sleep(600)",
                                    port, bound.string())},
                       dir);
  for (int i = 0; i < 500 && !std::filesystem::exists(bound); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!std::filesystem::exists(bound)) {
    kill(pid_, SIGKILL);
    wait_process(pid_);
    throw std::runtime_error(fmt::format("no process could be made to listen on 127.0.0.1:{}", port));
  }
}

PortHolder::~PortHolder() {
  kill(pid_, SIGKILL);
  wait_process(pid_);
}

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    throw std::runtime_error("cannot bind a loopback port");
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string> files_containing(const std::filesystem::path& dir, const std::string& needle) {
  std::vector<std::string> found;
  if (!std::filesystem::exists(dir)) return found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && read_text(entry.path()).find(needle) != std::string::npos) {
      found.push_back(entry.path().string());
    }
  }
  return found;
}

void run_or_throw(const std::vector<std::string>& args, const std::filesystem::path& cwd) {
  auto r = run_process(args, cwd, {}, 60);
  if (r.exit_code != 0) {
    throw std::runtime_error(fmt::format("{} failed (exit {}): {}{}", args[0], r.exit_code, r.out, r.err));
  }
}

std::vector<std::string> as_service_user(const std::string& user, const std::filesystem::path& dir,
                                         std::vector<std::string> args) {
  if (geteuid() != 0) return args;
  const passwd* pw = getpwnam(user.c_str());
  if (!pw) throw std::runtime_error("no system user " + user + " (its package makes it: run make deps)");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    (void)chown(entry.path().c_str(), pw->pw_uid, pw->pw_gid);
  }
  (void)chown(dir.c_str(), pw->pw_uid, pw->pw_gid);
  args.insert(args.begin(), {"/usr/sbin/runuser", "-u", user, "--"});
  return args;
}

}  // namespace skippr::test
