// An Env that forwards to another one (the real disk or a MemEnv) and injects faults by operation: fail the Nth
// matching call with EIO or ENOSPC, tear a write after K bytes, or "lose power" after the Nth mutating call (every
// later call fails, as if the process were gone; the test then calls MemEnv::power_cut). It also counts calls, so
// a crash-point test can first count the operations of a run and then cut after each one in turn. Thread-safe.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "core/env.h"

namespace skippr::testing {

enum class Op {
  kOpen,
  kAppend,
  kWriteAt,
  kSync,
  kTruncate,
  kClose,
  kRename,
  kUnlink,
  kFsyncDir,
  kCreateDirs,
  kRemoveDir
};
const char* to_string(Op op);

class FaultEnv final : public Env {
 public:
  explicit FaultEnv(Env& base) : base_(base) {}

  // The next `op` (whose path contains `path_part`, after skipping `skip` matches) fails with `err` (EIO, ENOSPC,
  // ...), and so does every later match while `sticky`. An append that fails first writes `torn_bytes` of its data
  // (a torn write). One rule at a time; set_fault replaces it.
  struct Fault {
    Op op = Op::kSync;
    int err = EIO;
    std::string path_part;
    int skip = 0;
    bool sticky = false;
    size_t torn_bytes = 0;
  };
  void set_fault(Fault fault);
  void clear_fault();

  // After the `n`th mutating call (1-based) completes, the power is off: every later call fails with EIO.
  void power_off_after(uint64_t n);
  bool powered_off() const { return powered_off_; }
  // Power back on (after MemEnv::power_cut), no fault armed, the counters kept.
  void power_on();

  // Every file sync takes at least this long (a slow disk), so concurrency around it can be tested on tmpfs.
  std::atomic<int> sync_latency_ms{0};

  uint64_t mutating_calls() const { return mutating_calls_; }
  uint64_t syncs() const { return syncs_; }
  uint64_t injected() const { return injected_; }
  uint64_t bytes_read() const { return bytes_read_; }  // by read_range and read_file
  // Calls of sync() on a file whose sync had already failed: must stay 0 (fsyncgate).
  uint64_t syncs_after_failed_sync() const { return syncs_after_failed_sync_; }

  Result<std::unique_ptr<WritableFile>> open_writable(const std::filesystem::path& path, OpenMode mode) override;
  Result<std::string> read_range(const std::filesystem::path& path, uint64_t offset, uint64_t length) override;
  Result<std::string> read_file(const std::filesystem::path& path) override;
  Result<std::vector<std::string>> list_dir(const std::filesystem::path& dir) override;
  Result<bool> exists(const std::filesystem::path& path) override;
  Result<uint64_t> file_size(const std::filesystem::path& path) override;
  Status rename(const std::filesystem::path& from, const std::filesystem::path& to) override;
  Status unlink(const std::filesystem::path& path) override;
  Status fsync_dir(const std::filesystem::path& dir) override;
  Status create_dirs(const std::filesystem::path& dir) override;
  Status remove_dir(const std::filesystem::path& dir) override;

 private:
  class File;
  // Decides the fate of one call before it runs: nullopt = go ahead, else the errno to fail with.
  std::optional<int> before(Op op, const std::filesystem::path& path, size_t* torn_bytes = nullptr);
  // Counts a completed mutating call; may switch the power off.
  void after_mutation();
  Status injected_error(Op op, const std::filesystem::path& path, int err);

  Env& base_;
  std::mutex mu_;
  std::optional<Fault> fault_;
  std::optional<uint64_t> power_off_after_;
  std::atomic<bool> powered_off_{false};
  std::atomic<uint64_t> mutating_calls_{0};
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> injected_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> syncs_after_failed_sync_{0};
};

}  // namespace skippr::testing
