// The SFTP calls skipprd makes, on libssh: a session whose host key is checked against a known_hosts file before
// any credential is sent, key or password login, the write that makes a file visible whole and once (a temp file,
// fsync@openssh.com, then a rename that SFTP v3 refuses onto an existing name), and the reads of the File source
// (a folder's files, one file's size and mtime, a streamed download of exactly the version listed).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

struct SftpOptions {
  std::string host;
  int port = 22;
  std::string user;
  std::filesystem::path private_key_file;  // used when set; else `password`
  std::string password;
  std::filesystem::path known_hosts_file;  // where the server's host key must be
  bool strict_host_key_checking = true;    // false: any host key is accepted (an explicit opt-out)
  long timeout_seconds = 30;               // connecting, and every blocking call after
};

enum class SftpPutOutcome { kCreated, kAlreadyExists };

// A regular file on the server. SFTP v3 (all OpenSSH speaks) gives whole seconds: mtime_ns is then a multiple of 1e9.
struct SftpFileInfo {
  std::string path;  // list_files: relative to the folder listed, '/'-separated; stat: as asked
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const SftpFileInfo&) const = default;
};

class SftpClient {
 public:
  // Connects, checks the host key and logs in. Errors: kConfig for what waiting cannot fix (an unknown or changed
  // host key, refused credentials, an unreadable key file), kUnavailable when the server cannot be reached. No
  // message carries the password or the key.
  static Result<SftpClient> connect(const SftpOptions& options);

  SftpClient(SftpClient&&) noexcept;
  SftpClient& operator=(SftpClient&&) noexcept;
  ~SftpClient();

  Result<bool> exists(const std::string& path);
  // kConfig when `path` is not an existing folder.
  Status check_directory(const std::string& path);
  // kConfig when the user may not create `file` (made empty, then removed): a folder it cannot write in is found
  // before any batch is committed.
  Status check_writable(const std::string& file);
  // Makes `path` and its missing parents below `existing_base` (which must exist) as folders.
  Status mkdir_p(const std::string& existing_base, const std::string& path);
  // Writes `bytes` to `tmp` (truncating what a killed run left there), fsyncs it when the server has
  // fsync@openssh.com, then renames it to `final_path`. kAlreadyExists, without writing, when `final_path` is there
  // already or the rename finds it there (the temp is removed). kUnknownOutcome when the connection broke during the
  // rename. `before_rename` runs between the two (the sink's crash point for chaos tests).
  Result<SftpPutOutcome> write_file_atomically(const std::string& tmp, const std::string& final_path,
                                               std::string_view bytes,
                                               const std::function<void()>& before_rename = nullptr);
  Status remove(const std::string& path);
  // The regular files in `folder` (and below it when `recursive`; symbolic links to files count, links to folders
  // are not followed), sorted by path. A missing `folder` is no files: they may come later. kConfig when the user
  // may not read a folder.
  Result<std::vector<SftpFileInfo>> list_files(const std::string& folder, bool recursive);
  // kConfig when `folder` exists but the user may not list it (found at start, not after the sink opened); a missing
  // folder is fine (files may come later).
  Status check_listable(const std::string& folder);
  // The regular file at `path` (links followed); nullopt when there is none.
  Result<std::optional<SftpFileInfo>> stat(const std::string& path);
  // Streams `path` to `out` in 256 KiB reads (memory bounded whatever its size). SFTP has no conditional read: the
  // open file's size and mtime are checked against `expected` before the first read and after the last, and a
  // difference is kBadInput "... was replaced or changed" (the bytes written are then not that version). A write
  // error on `out` is kDiskFull / kFatalIo.
  Status download(const std::string& path, const SftpFileInfo& expected, std::FILE* out);
  bool fsync_supported() const;
  // false once the connection broke: the caller connects again.
  bool connected() const;

 private:
  struct Handles;
  explicit SftpClient(std::unique_ptr<Handles> handles);
  Error error_of(const std::string& what, ErrorKind broken_connection = ErrorKind::kUnavailable) const;

  std::unique_ptr<Handles> h_;
};

}  // namespace skippr
