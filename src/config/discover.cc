// discover_config: --config, else SKIPPR_CONFIG_FILE, else skippr.yml in the start folder or its nearest parent.
#include <cstdlib>

#include <fmt/format.h>

#include "config/config.h"

namespace skippr {

namespace {

constexpr const char* kConfigFileName = "skippr.yml";

// A named file must exist: a typo in --config should not silently fall back to another skippr.yml.
Result<std::filesystem::path> named_file(const std::filesystem::path& path, std::string_view named_by) {
  const auto absolute = std::filesystem::absolute(path).lexically_normal();
  std::error_code ec;
  if (!std::filesystem::exists(absolute, ec)) {
    return fail(ErrorKind::kConfig,
                fmt::format("config file {} not found ({}); check the path", path.string(), named_by));
  }
  if (std::filesystem::is_directory(absolute, ec)) {
    return fail(ErrorKind::kConfig,
                fmt::format("config file {} is a folder ({}); name the skippr.yml inside it", path.string(), named_by));
  }
  return absolute;
}

}  // namespace

Result<std::filesystem::path> discover_config(const std::optional<std::filesystem::path>& explicit_path,
                                              const std::filesystem::path& start_dir) {
  if (explicit_path) return named_file(*explicit_path, "given by --config");
  if (const char* env = std::getenv("SKIPPR_CONFIG_FILE"); env != nullptr && *env != '\0') {
    return named_file(env, "given by SKIPPR_CONFIG_FILE");
  }
  const auto start = std::filesystem::absolute(start_dir).lexically_normal();
  for (auto dir = start;; dir = dir.parent_path()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / kConfigFileName, ec)) return dir / kConfigFileName;
    if (dir == dir.parent_path()) break;
  }
  return fail(ErrorKind::kConfig,
              fmt::format("no {} in {} or any folder above it; create {} there, or pass --config <file> (or set "
                          "SKIPPR_CONFIG_FILE)",
                          kConfigFileName, start.string(), kConfigFileName));
}

}  // namespace skippr
