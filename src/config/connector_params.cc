#include "config/connector_params.h"

#include <algorithm>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "config/suggest.h"
#include "config/yaml_values.h"

namespace skippr::config_detail {

namespace {

std::filesystem::path absolute_against(const std::filesystem::path& base_dir, const std::string& text) {
  // A URL (s3://bucket/key, sftp://host/folder) names a place elsewhere: it is kept as written.
  static const std::regex url(R"(^[A-Za-z][A-Za-z0-9+.-]*://.*)");
  if (std::regex_match(text, url)) return std::filesystem::path(text);
  std::filesystem::path p(text);
  if (p.is_relative()) p = base_dir / p;
  return p.lexically_normal();
}

// nullopt when a problem was recorded.
std::optional<nlohmann::json> read_param(const ParamSpec& param, const YAML::Node& value, std::string_view what,
                                         const std::filesystem::path& base_dir, Diagnostics& diag) {
  switch (param.type) {
    case ParamType::kString:
      if (auto v = read_string(value, what, diag)) return nlohmann::json(*v);
      break;
    case ParamType::kInt:
      if (auto v = read_int(value, what, diag)) return nlohmann::json(*v);
      break;
    case ParamType::kDouble:
      if (auto v = read_double(value, what, diag)) return nlohmann::json(*v);
      break;
    case ParamType::kBool:
      if (auto v = read_bool(value, what, diag)) return nlohmann::json(*v);
      break;
    case ParamType::kPath:
      if (auto v = read_string(value, what, diag)) {
        if (v->empty()) {
          diag.add(value.Mark(), fmt::format("{}: must be a path, got an empty string; write a file path", what));
          break;
        }
        return nlohmann::json(absolute_against(base_dir, *v).string());
      }
      break;
    case ParamType::kStringList:
      if (auto v = read_string_list(value, what, diag)) return nlohmann::json(*v);
      break;
    case ParamType::kStringMap:
      if (auto v = read_string_map(value, what, diag)) return nlohmann::json(*v);
      break;
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json validate_params(const ConnectorSpec& spec, const YAML::Node& params, const YAML::Node& type_key,
                               std::string_view what, const std::filesystem::path& base_dir, Diagnostics& diag) {
  std::vector<std::string> known;
  for (const auto& p : spec.params) known.push_back(p.name);

  nlohmann::json out = nlohmann::json::object();
  std::map<std::string, YAML::Node> given;
  for (auto& entry : read_entries(params, what, diag)) {
    if (std::ranges::find(known, entry.key) == known.end()) {
      diag.add(entry.key_node.Mark(),
               fmt::format("{}: unknown key '{}'{}", what, entry.key,
                           suggestion(entry.key, known, fmt::format("keys of {}", spec.type_name))));
      continue;
    }
    given.emplace(entry.key, entry.value);
  }

  for (const auto& param : spec.params) {
    const std::string param_what = fmt::format("{}.{}", what, param.name);
    if (auto it = given.find(param.name); it != given.end()) {
      if (auto value = read_param(param, it->second, param_what, base_dir, diag)) out[param.name] = std::move(*value);
    } else if (param.required) {
      diag.add(type_key.Mark(), fmt::format("{}: missing required key '{}' ({}: {}); add it", what, param.name,
                                            to_string(param.type), param.doc));
    } else if (!param.default_value.is_null()) {
      // A default path is relative to the config file too, like a written one.
      out[param.name] =
          param.type == ParamType::kPath
              ? nlohmann::json(absolute_against(base_dir, param.default_value.get<std::string>()).string())
              : param.default_value;
    }
  }
  return out;
}

}  // namespace skippr::config_detail
