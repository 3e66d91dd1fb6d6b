#include "config/diagnostics.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

namespace skippr {

std::string SourceLocation::str() const { return fmt::format("{}:{}:{}", file, line, column); }

namespace config_detail {

SourceLocation Diagnostics::location(const YAML::Mark& at) const {
  if (at.is_null()) return {file_, 1, 1};
  return {file_, at.line + 1, at.column + 1};
}

void Diagnostics::add(const YAML::Mark& at, std::string message) {
  problems_.push_back({location(at), std::move(message)});
}

void Diagnostics::add(int line, int column, std::string message) {
  problems_.push_back({{file_, line, column}, std::move(message)});
}

void Diagnostics::add(SourceLocation where, std::string message) {
  problems_.push_back({std::move(where), std::move(message)});
}

Error Diagnostics::to_error() const {
  std::vector<Problem> sorted = problems_;
  // Other files (.env, read first) before the config file, then in reading order.
  auto key = [this](const Problem& p) { return std::tuple(p.where.file == file_, p.where.line, p.where.column); };
  std::ranges::stable_sort(sorted, [&](const Problem& a, const Problem& b) { return key(a) < key(b); });
  std::string message;
  for (const auto& p : sorted) {
    if (!message.empty()) message += '\n';
    message += fmt::format("{}: {}", p.where.str(), p.message);
  }
  return Error{ErrorKind::kConfig, std::move(message)};
}

}  // namespace config_detail
}  // namespace skippr
