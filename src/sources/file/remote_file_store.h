// What every remote store of the File source (S3, Azure Blob, GCS) does the same way: an object is read from a local
// copy, downloaded whole into one cache file under the pipeline's folder (disk bounded by the largest object, memory
// not at all), checked against the size its listing gave, and deleted once read. A store says only how to download
// one version of an object (a conditional GET on its ETag or generation).
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "sources/file/file_store.h"

namespace skippr {

// `scheme://container/key-pattern` taken apart: the bucket or container, the glob over keys, and the pattern's fixed
// key prefix (its folder, with the '/'), which the listing asks for.
struct RemoteLocation {
  std::string container;
  GlobPattern pattern;
  std::string prefix;
  // The file name (relative to the prefix) of a listed key, nullopt when the key does not match (or is a "folder"
  // marker ending in '/').
  std::optional<std::string> name_of(const std::string& key) const;
};
// kConfig naming `where` for a URL without a container or a key pattern.
Result<RemoteLocation> parse_remote_location(const std::string& url, std::string_view where);

class RemoteFileStore : public FileStore {
 public:
  RemoteFileStore(std::filesystem::path cache_dir, std::string where)
      : cache_dir_(std::move(cache_dir)), where_(std::move(where)) {}
  ~RemoteFileStore() override { release(); }

  Result<std::filesystem::path> fetch(const std::string& name, const FileIdentity& identity) final;
  void release() final;
  bool versions_are_content() const final { return true; }

 protected:
  // Writes exactly version `identity.version` of `name` to `file`; kBadInput when the object is no longer that
  // version (replaced or deleted meanwhile).
  virtual Status download(const std::string& name, const FileIdentity& identity, std::FILE* file) = 0;
  // "File source '<name>'": the start of every message.
  const std::string& where() const { return where_; }

 private:
  std::filesystem::path cache_dir_;
  std::string where_;
  std::optional<std::filesystem::path> cached_;
};

}  // namespace skippr
