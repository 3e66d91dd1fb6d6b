// An in-memory file system that models what survives a power cut, after LevelDB's fault_injection_test: a file's
// bytes are durable only up to its last sync, and a directory entry (a creation, rename, unlink, mkdir, rmdir) only
// once its directory was fsynced. power_cut() throws away everything else. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/env.h"

namespace skippr::testing {

class MemEnv final : public Env {
 public:
  // What happens to bytes written since a file's last sync when the power goes.
  enum class Unsynced {
    kDropped,   // all lost (the usual outcome)
    kHalfKept,  // the first half of them reached the disk: a write torn in the middle of a record
  };

  // Reverts to what is durable. Files opened before the cut are dead: every call on them fails.
  void power_cut(Unsynced unsynced = Unsynced::kDropped);

  // The content of `path` as the running process sees it (nullopt when absent).
  std::optional<std::string> content(const std::filesystem::path& path);

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
  struct Inode {
    std::string data;     // what reads see
    std::string durable;  // what the last sync made durable
  };
  struct Entry {
    bool is_dir = false;
    std::shared_ptr<Inode> inode;  // files only
  };
  using Tree = std::map<std::filesystem::path, Entry>;
  class File;

  bool is_dir_locked(const std::filesystem::path& path) const;
  Result<std::shared_ptr<Inode>> file_locked(const std::filesystem::path& path) const;

  std::mutex mu_;
  Tree live_;                // the namespace the process sees
  Tree durable_;             // the namespace a power cut falls back to
  uint64_t generation_ = 0;  // bumped by power_cut; a File of an older generation is dead
};

}  // namespace skippr::testing
