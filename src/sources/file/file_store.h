// Where the File source's files are: a local folder or a bucket. The source reads only through this seam: list what
// matches, tell a file's identity now, and get a local path holding exactly the version it identified (a remote
// object is downloaded into a cache first, so every format reader works on every store, in bounded memory).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "sources/file/file_position.h"
#include "sources/file/glob.h"

namespace skippr {

struct StoredFile {
  std::string name;  // relative to the pattern's base, '/'-separated
  FileIdentity identity;
};

class FileStore {
 public:
  virtual ~FileStore() = default;
  // Checks the place can be read: kConfig when it cannot be (a missing bucket, refused credentials).
  virtual Status open() = 0;
  // Every file matching the pattern, sorted by name. A missing folder is no match (files may come later).
  virtual Result<std::vector<StoredFile>> list() = 0;
  // The file's identity now; nullopt when it is gone.
  virtual Result<std::optional<FileIdentity>> identity(const std::string& name) = 0;
  // A local path holding the version `identity` of the file; kBadInput when the file is no longer that version.
  virtual Result<std::filesystem::path> fetch(const std::string& name, const FileIdentity& identity) = 0;
  // The copy fetch made is no longer needed.
  virtual void release() {}
  // How messages and dead letters name the file: its local path, s3://bucket/key.
  virtual std::string display(const std::string& name) const = 0;
  // true: a version names content that never changes under it (an ETag), so a finished file found with another
  // version was replaced, which is reported rather than ignored. A local file's size and mtime change when it is
  // appended to or touched, so finished local files are not watched.
  virtual bool versions_are_content() const { return false; }
};

std::unique_ptr<FileStore> local_file_store(GlobPattern pattern);

}  // namespace skippr
