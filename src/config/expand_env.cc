#include "config/expand_env.h"

#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

namespace skippr::config_detail {

namespace {

bool is_variable_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

std::expected<std::string, std::string> expand_env(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (text[i + 1] != '{') {
      out += text[i++];
      continue;
    }
    const size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      return std::unexpected(
          fmt::format("'{}' has no closing '}}'; write ${{NAME}} or ${{NAME:-default}}", text.substr(i)));
    }
    const std::string_view inside = text.substr(i + 2, close - i - 2);
    const size_t dash = inside.find(":-");
    const std::string_view name = inside.substr(0, dash);
    if (!is_variable_name(name)) {
      return std::unexpected(
          fmt::format("'${{{}}}' is not a valid variable reference; write ${{NAME}} or "
                      "${{NAME:-default}} (letters, digits and _), or $$ for a literal $",
                      inside));
    }
    const char* value = std::getenv(std::string(name).c_str());
    if (dash != std::string_view::npos) {
      out += (value != nullptr && *value != '\0') ? std::string_view(value) : inside.substr(dash + 2);
    } else if (value != nullptr) {
      out += value;
    } else {
      return std::unexpected(
          fmt::format("environment variable '{}' is not set; set it (or add it to .env beside "
                      "the config file), or write ${{{}:-default}}",
                      name, name));
    }
    i = close + 1;
  }
  return out;
}

}  // namespace skippr::config_detail
