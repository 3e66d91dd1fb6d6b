#include "config/dotenv.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "config/parse_text.h"

namespace skippr::config_detail {

namespace {

bool is_key(std::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key.front()))) return false;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Returns false when the closing quote is missing.
bool unquote(std::string_view raw, std::string& value) {
  const char quote = raw.front();
  value.clear();
  for (size_t i = 1; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == quote) {
      // Anything after the closing quote may only be a comment.
      const std::string_view rest = trim(raw.substr(i + 1));
      return rest.empty() || rest.front() == '#';
    }
    if (quote == '"' && c == '\\' && i + 1 < raw.size()) {
      const char next = raw[++i];
      value += next == 'n' ? '\n' : next == 't' ? '\t' : next;
      continue;
    }
    value += c;
  }
  return false;
}

std::string_view strip_inline_comment(std::string_view bare) {
  for (size_t i = 0; i < bare.size(); ++i) {
    if (bare[i] == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(bare[i - 1])))) {
      return trim(bare.substr(0, i));
    }
  }
  return bare;
}

}  // namespace

Dotenv parse_dotenv(std::string_view text) {
  Dotenv result;
  std::istringstream lines{std::string(text)};
  std::string line_text;
  int line_no = 0;
  while (std::getline(lines, line_text)) {
    ++line_no;
    std::string_view line = trim(line_text);
    if (line.empty() || line.front() == '#') continue;
    if (line.starts_with("export ")) line = trim(line.substr(7));
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      result.problems.push_back({line_no, fmt::format("'{}' is not KEY=VALUE; fix or remove the line", line)});
      continue;
    }
    const std::string_view key = trim(line.substr(0, eq));
    if (!is_key(key)) {
      result.problems.push_back(
          {line_no,
           fmt::format("'{}' is not a variable name (letters, digits and _, not starting with a digit)", key)});
      continue;
    }
    const std::string_view raw = trim(line.substr(eq + 1));
    std::string value;
    if (!raw.empty() && (raw.front() == '"' || raw.front() == '\'')) {
      if (!unquote(raw, value)) {
        result.problems.push_back(
            {line_no, fmt::format("the value of {} has no closing {} (or text after it); quote the whole value", key,
                                  raw.front())});
        continue;
      }
    } else {
      value = strip_inline_comment(raw);
    }
    result.variables.emplace_back(std::string(key), std::move(value));
  }
  return result;
}

std::vector<DotenvProblem> load_dotenv(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return {};
    return {{1, fmt::format("cannot read {}; check its permissions", file.string())}};
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  Dotenv dotenv = parse_dotenv(buffer.str());
  // A key repeated in the file: the last line wins, as in a shell script.
  std::map<std::string, std::string> last_value(dotenv.variables.begin(), dotenv.variables.end());
  for (const auto& [key, value] : dotenv.variables) last_value[key] = value;
  for (const auto& [key, value] : last_value) ::setenv(key.c_str(), value.c_str(), /*overwrite=*/0);
  return std::move(dotenv.problems);
}

}  // namespace skippr::config_detail
