// The I/O seam: every file-system call the WAL and the state files make goes through an Env, so a test can inject
// faults (a failing fsync, a full disk, a power cut that drops unsynced data) without touching the code under test.
// The default is PosixEnv (default_env()). Errors are classified here, once: ENOSPC/EDQUOT is kDiskFull, a failed
// sync or close is kFatalIo, anything else is kUnavailable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

// A file opened for writing. Not thread-safe; its owner serialises access.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(std::string_view data) = 0;                     // at the current end
  virtual Status write_at(uint64_t offset, std::string_view data) = 0;  // must not extend past the end + data
  virtual Status sync() = 0;                                            // fdatasync: data (and size) durable
  virtual Status truncate(uint64_t size) = 0;
  virtual Status close() = 0;
  virtual uint64_t size() const = 0;
  virtual const std::filesystem::path& path() const = 0;
};

enum class OpenMode {
  kCreateExclusive,   // fails when the file exists (a new WAL segment must never clobber one)
  kCreateOrTruncate,  // temporary files
  kAppendExisting,    // reopen a segment after recovery
};

class Env {
 public:
  virtual ~Env() = default;
  virtual Result<std::unique_ptr<WritableFile>> open_writable(const std::filesystem::path& path, OpenMode mode) = 0;
  // Up to `length` bytes from `offset`; fewer when the file ends first.
  virtual Result<std::string> read_range(const std::filesystem::path& path, uint64_t offset, uint64_t length) = 0;
  virtual Result<std::string> read_file(const std::filesystem::path& path) = 0;
  // Names (not paths) of the entries of `dir`.
  virtual Result<std::vector<std::string>> list_dir(const std::filesystem::path& dir) = 0;
  virtual Result<bool> exists(const std::filesystem::path& path) = 0;
  virtual Result<uint64_t> file_size(const std::filesystem::path& path) = 0;
  virtual Status rename(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  virtual Status unlink(const std::filesystem::path& path) = 0;
  // Makes the directory's entries (creations, renames, unlinks) durable.
  virtual Status fsync_dir(const std::filesystem::path& dir) = 0;
  // Creates every missing directory of `dir` and fsyncs the parent of each one it created, so the new directory
  // survives a power cut.
  virtual Status create_dirs(const std::filesystem::path& dir) = 0;
  // Removes an empty directory; the caller fsyncs its parent to make that durable.
  virtual Status remove_dir(const std::filesystem::path& dir) = 0;
};

// The one classification of an errno, shared by every Env (the fault-injecting test Env reports exactly what the
// POSIX one would): ENOSPC/EDQUOT -> kDiskFull ("the disk is full", where, what to do), anything else kUnavailable.
Error io_error(std::string_view what, const std::filesystem::path& path, int err);
// A failed fsync/fdatasync/close: kFatalIo, never retried (fsyncgate).
Error sync_error(std::string_view what, const std::filesystem::path& path, int err);

// The process-wide POSIX implementation.
// What skipprd keeps for itself (WAL, state, stats, dead letters, config saves): files 0600, folders 0700, since
// records and positions may be sensitive.
Env& default_env();
// The same I/O for files made for others to read (the File sink's output): 0644 / 0755 (less the umask).
Env& shared_files_env();

// Replaces `path` with `content` so that a crash leaves either the old or the new content, never a mix:
// write a temporary file next to it, fsync it, rename it over `path`, fsync the directory.
Status write_file_atomically(Env& env, const std::filesystem::path& path, std::string_view content);

// The same for a file a person keeps (skippr.yml): a symbolic link is followed (the file it names is replaced, the
// link stays), and the new file keeps the old one's permission bits before it takes its place, so a file kept
// private (it may hold secrets) is never readable by others, even for an instant.
Status replace_kept_file(const std::filesystem::path& path, std::string_view content);

}  // namespace skippr
