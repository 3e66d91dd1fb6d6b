#include "sources/file/glob.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>

namespace skippr {

namespace {

bool has_wildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

std::vector<std::string_view> split_path(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (begin <= s.size()) {
    const size_t slash = s.find('/', begin);
    const size_t end = slash == std::string_view::npos ? s.size() : slash;
    if (end > begin) parts.push_back(s.substr(begin, end - begin));
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  return parts;
}

bool match_from(const std::vector<std::string>& pattern, size_t p, const std::vector<std::string_view>& path,
                size_t s) {
  if (p == pattern.size()) return s == path.size();
  if (pattern[p] == "**") {
    for (size_t skip = s; skip <= path.size(); ++skip) {
      if (match_from(pattern, p + 1, path, skip)) return true;
    }
    return false;
  }
  if (s == path.size()) return false;
  const std::string name(path[s]);
  return fnmatch(pattern[p].c_str(), name.c_str(), FNM_PERIOD) == 0 && match_from(pattern, p + 1, path, s + 1);
}

}  // namespace

GlobPattern parse_glob(const std::filesystem::path& pattern) {
  GlobPattern g;
  bool in_base = true;
  const std::string text = pattern.generic_string();  // split_path returns views into it
  for (const auto& part : split_path(text)) {
    if (in_base && !has_wildcard(part)) {
      g.base /= std::string(part);
    } else {
      in_base = false;
      g.segments.emplace_back(part);
    }
  }
  if (pattern.is_absolute()) g.base = std::filesystem::path("/") / g.base;
  // A plain file name (no wildcard): its folder is the base, the name the only segment.
  if (g.segments.empty() && g.base.has_filename()) {
    g.segments.push_back(g.base.filename().string());
    g.base = g.base.parent_path();
  }
  return g;
}

bool glob_matches(const std::vector<std::string>& segments, std::string_view relative) {
  return match_from(segments, 0, split_path(relative), 0);
}

Result<std::vector<std::filesystem::path>> expand_glob(const GlobPattern& pattern) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  if (!std::filesystem::is_directory(pattern.base, ec)) return found;
  const bool recursive =
      pattern.segments.size() > 1 || std::ranges::any_of(pattern.segments, [](auto& s) { return s == "**"; });
  auto consider = [&](const std::filesystem::directory_entry& entry) {
    std::error_code type_ec;
    if (!entry.is_regular_file(type_ec)) return;
    const std::string relative = entry.path().lexically_relative(pattern.base).generic_string();
    if (glob_matches(pattern.segments, relative)) found.push_back(entry.path());
  };
  if (recursive) {
    for (auto it = std::filesystem::recursive_directory_iterator(
             pattern.base, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      consider(*it);
    }
  } else {
    for (auto it = std::filesystem::directory_iterator(pattern.base, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      consider(*it);
    }
  }
  if (ec) {
    return fail(ErrorKind::kUnavailable, fmt::format("listing {}: {}", pattern.base.string(), ec.message()));
  }
  std::ranges::sort(found);
  return found;
}

}  // namespace skippr
