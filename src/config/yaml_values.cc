#include "config/yaml_values.h"

#include <set>

#include <fmt/format.h>

#include "config/expand_env.h"
#include "config/parse_text.h"

namespace skippr::config_detail {

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return fmt::format("'{}'", node.Scalar());
    default:
      return "nothing";
  }
}

std::optional<std::string> read_string(const YAML::Node& node, std::string_view what, Diagnostics& diag) {
  if (!node.IsScalar()) {
    diag.add(node.Mark(),
             fmt::format("{}: must be a string, got {}; write a value or remove the key", what, describe(node)));
    return std::nullopt;
  }
  auto expanded = expand_env(node.Scalar());
  if (!expanded) {
    diag.add(node.Mark(), fmt::format("{}: {}", what, expanded.error()));
    return std::nullopt;
  }
  return std::move(*expanded);
}

namespace {

// Reads a scalar and converts it; on failure records "must be <expected>, got <value>; <hint>".
template <class Parse>
auto read_converted(const YAML::Node& node, std::string_view what, Diagnostics& diag, std::string_view expected,
                    std::string_view hint, Parse parse) -> decltype(parse(std::string_view{})) {
  if (!node.IsScalar()) {
    diag.add(node.Mark(), fmt::format("{}: must be {}, got {}; {}", what, expected, describe(node), hint));
    return std::nullopt;
  }
  auto text = read_string(node, what, diag);
  if (!text) return std::nullopt;
  auto value = parse(*text);
  if (!value) diag.add(node.Mark(), fmt::format("{}: must be {}, got '{}'; {}", what, expected, *text, hint));
  return value;
}

}  // namespace

std::optional<int64_t> read_int(const YAML::Node& node, std::string_view what, Diagnostics& diag) {
  return read_converted(node, what, diag, "an integer", "write a whole number such as 100", parse_int64);
}

std::optional<double> read_double(const YAML::Node& node, std::string_view what, Diagnostics& diag) {
  return read_converted(node, what, diag, "a number", "write a number such as 1.5", parse_double);
}

std::optional<bool> read_bool(const YAML::Node& node, std::string_view what, Diagnostics& diag) {
  return read_converted(node, what, diag, "true or false", "write true or false", parse_bool);
}

std::optional<std::vector<std::string>> read_string_list(const YAML::Node& node, std::string_view what,
                                                         Diagnostics& diag, bool allow_single) {
  if (allow_single && node.IsScalar()) {
    auto one = read_string(node, what, diag);
    if (!one) return std::nullopt;
    return std::vector<std::string>{std::move(*one)};
  }
  if (!node.IsSequence()) {
    diag.add(node.Mark(), fmt::format("{}: must be a list of strings, got {}; write [a, b]", what, describe(node)));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto item = read_string(node[i], fmt::format("{}[{}]", what, i), diag);
    if (item) {
      out.push_back(std::move(*item));
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::map<std::string, std::string>> read_string_map(const YAML::Node& node, std::string_view what,
                                                                  Diagnostics& diag) {
  if (!node.IsMap()) {
    diag.add(node.Mark(),
             fmt::format("{}: must be a map of strings, got {}; write {{key: value}}", what, describe(node)));
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  bool ok = true;
  for (const auto& entry : read_entries(node, what, diag)) {
    auto value = read_string(entry.value, fmt::format("{}.{}", what, entry.key), diag);
    if (value) {
      out[entry.key] = std::move(*value);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::vector<Entry> read_entries(const YAML::Node& node, std::string_view what, Diagnostics& diag) {
  std::vector<Entry> entries;
  if (node.IsNull()) return entries;
  if (!node.IsMap()) {
    diag.add(node.Mark(), fmt::format("{}: must be a map (name: value lines), got {}", what, describe(node)));
    return entries;
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar()) {
      diag.add(key.Mark(), fmt::format("{}: a key must be a plain name, got {}", what, describe(key)));
      continue;
    }
    if (!seen.insert(key.Scalar()).second) {
      diag.add(key.Mark(), fmt::format("{}: '{}' appears twice; keep one", what, key.Scalar()));
      continue;
    }
    entries.push_back({key.Scalar(), key, it->second});
  }
  return entries;
}

}  // namespace skippr::config_detail
