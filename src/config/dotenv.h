// .env beside skippr.yml: KEY=VALUE lines exported into the process environment before ${VAR} is expanded.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace skippr::config_detail {

struct DotenvProblem {
  int line = 0;  // 1-based
  std::string message;
};

struct Dotenv {
  std::vector<std::pair<std::string, std::string>> variables;  // in file order
  std::vector<DotenvProblem> problems;
};

// Lines: `KEY=VALUE`, optionally `export KEY=VALUE`; blank lines and `# comments` are skipped. A value may be
// 'single-quoted' (literal), "double-quoted" (\n, \t, \" and \\ escapes) or bare (trimmed; ` #` starts a comment).
Dotenv parse_dotenv(std::string_view text);

// Sets every variable that is not already set: the real environment wins over the file, so a deployment can
// override a developer's .env. A missing file is not an error.
std::vector<DotenvProblem> load_dotenv(const std::filesystem::path& file);

}  // namespace skippr::config_detail
