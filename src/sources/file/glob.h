// Path patterns for the File source: `*`, `?` and `[...]` inside one path segment (fnmatch), `**` for any number of
// folders (zero included). Matches are returned sorted, so files are read in a stable order.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"

namespace skippr {

struct GlobPattern {
  std::filesystem::path base;         // the longest leading part without a wildcard: the folder the walk starts from
  std::vector<std::string> segments;  // the rest, split at '/'
};

GlobPattern parse_glob(const std::filesystem::path& pattern);
// Whether `relative` (a path under base, '/'-separated) matches the segments.
bool glob_matches(const std::vector<std::string>& segments, std::string_view relative);
// Every regular file matching, sorted by path. A missing base folder is no match (files may come later).
Result<std::vector<std::filesystem::path>> expand_glob(const GlobPattern& pattern);

}  // namespace skippr
