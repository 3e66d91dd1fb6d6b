// The File source's resume point: the files finished, and the file being read with its decompressed byte offset
// (or row, for parquet), next line number and identity (size and mtime when first opened), so a restart resumes
// exactly where the committed batch ended and refuses a file that changed in between.
// It also carries the field types inferred so far, so a resumed run infers exactly what an uninterrupted one would.
// JSON: {"done":["a.jsonl",...],"file":"b.jsonl","offset":123,"line":4,"size":999,"mtime_ns":...,
// "types":{"id":"int64",...}}; names are relative to the glob's base folder. An object store adds the version
// (ETag) of the current object ("version") and of each finished one ("versions": {"a.jsonl": "\"etag\""}). A path
// with {stream} keeps each named stream's types apart ("stream_types": {"orders": {"id":"int64"}}).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/batch.h"

namespace skippr {

// A local file's size and mtime; an object's size and version (its ETag), which names its content.
struct FileIdentity {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string version = {};
  bool operator==(const FileIdentity&) const = default;
};

struct CurrentFile {
  std::string name;
  uint64_t offset = 0;
  uint64_t line = 1;
  FileIdentity identity;
};

struct FilePosition {
  std::set<std::string> done;
  std::map<std::string, std::string, std::less<>> done_versions;  // objects only: the version each was read in
  std::optional<CurrentFile> current;
  // The types inferred per stream; "" is the stream of a path without {stream} (kept under "types").
  std::map<std::string, std::map<std::string, Type, std::less<>>, std::less<>> types;
};

Position encode_file_position(const FilePosition& p);
// nullopt when the token is not one of ours.
std::optional<FilePosition> decode_file_position(const Position& position);

}  // namespace skippr
