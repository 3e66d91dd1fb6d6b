#include "config/param_values.h"

#include <fmt/format.h>

#include <algorithm>

#include "config/parse_text.h"
#include "config/suggest.h"

namespace skippr {

namespace {

using config_detail::parse_bool;
using config_detail::parse_double;
using config_detail::parse_int64;

std::string shown(const nlohmann::json& value) {
  if (value.is_string()) return fmt::format("'{}'", value.get<std::string>());
  if (value.is_boolean()) return fmt::format("the boolean {}", value.dump());
  if (value.is_array()) return "a list";
  if (value.is_object()) return "a map";
  if (value.is_null()) return "nothing (None)";
  return value.dump();
}

bool fits(ParamType type, const nlohmann::json& value) {
  if (is_env_reference(value)) return true;
  switch (type) {
    case ParamType::kString:
      return value.is_string();
    case ParamType::kPath:
      return value.is_string() && !value.get<std::string>().empty();
    case ParamType::kInt:
      return value.is_number_integer();
    case ParamType::kDouble:
      return value.is_number();
    case ParamType::kBool:
      return value.is_boolean();
    case ParamType::kStringList:
      if (!value.is_array()) return false;
      for (const auto& item : value) {
        if (!item.is_string()) return false;
      }
      return true;
    case ParamType::kStringMap:
      if (!value.is_object()) return false;
      for (const auto& [_, item] : value.items()) {
        if (!item.is_string()) return false;
      }
      return true;
  }
  return false;
}

const char* expected(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return "a string";
    case ParamType::kPath:
      return "a non-empty path string";
    case ParamType::kInt:
      return "an integer";
    case ParamType::kDouble:
      return "a number";
    case ParamType::kBool:
      return "True or False";
    case ParamType::kStringList:
      return "a list of strings";
    case ParamType::kStringMap:
      return "a map of strings to strings";
  }
  return "a string";
}

nlohmann::json scalar_as(ParamType type, const std::string& text) {
  if (text.find("${") != std::string::npos) return text;
  switch (type) {
    case ParamType::kInt:
      if (auto v = parse_int64(text)) return *v;
      break;
    case ParamType::kDouble:
      if (auto v = parse_double(text)) return *v;
      break;
    case ParamType::kBool:
      if (auto v = parse_bool(text)) return *v;
      break;
    default:
      break;
  }
  return text;
}

nlohmann::json plain_value(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(plain_value(item));
    return out;
  }
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& item : node) out[item.first.Scalar()] = plain_value(item.second);
    return out;
  }
  return nullptr;
}

}  // namespace

bool is_env_reference(const nlohmann::json& value) {
  return value.is_string() && value.get<std::string>().find("${") != std::string::npos;
}

std::optional<std::string> param_value_problem(const ParamSpec& param, const nlohmann::json& value) {
  if (fits(param.type, value)) return std::nullopt;
  return fmt::format("'{}' must be {} (or a ${{VAR}} reference), got {}", param.name, expected(param.type),
                     shown(value));
}

std::optional<std::string> params_problem(const ConnectorSpec& spec, const nlohmann::json& params) {
  std::vector<std::string> known;
  for (const auto& p : spec.params) known.push_back(p.name);
  const std::string takes = known.empty() ? fmt::format("{} takes no parameters", spec.type_name)
                                          : fmt::format("{} takes: {}", spec.type_name, config_detail::join(known));
  if (!params.is_object()) return fmt::format("the parameters must be a map; {}", takes);
  for (const auto& [key, value] : params.items()) {
    const auto param = std::ranges::find(spec.params, key, &ParamSpec::name);
    if (param == spec.params.end()) {
      const auto match = config_detail::closest_match(key, known);
      return fmt::format("unknown parameter '{}'{}; {}", key,
                         match.empty() ? "" : fmt::format(" (did you mean '{}'?)", match), takes);
    }
    if (auto problem = param_value_problem(*param, value)) return problem;
  }
  for (const auto& p : spec.params) {
    if (p.required && !params.contains(p.name)) {
      return fmt::format("missing required parameter '{}' ({}: {})", p.name, to_string(p.type), p.doc);
    }
  }
  return std::nullopt;
}

nlohmann::json raw_param_value(const ParamSpec* param, const YAML::Node& node) {
  if (param == nullptr || !node.IsScalar()) return plain_value(node);
  return scalar_as(param->type, node.Scalar());
}

YAML::Node to_yaml_node(const nlohmann::json& value) {
  YAML::Node node;
  if (value.is_array()) {
    node = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& item : value) node.push_back(to_yaml_node(item));
    node.SetStyle(YAML::EmitterStyle::Flow);
  } else if (value.is_object()) {
    node = YAML::Node(YAML::NodeType::Map);
    for (const auto& [key, item] : value.items()) node[key] = to_yaml_node(item);
    node.SetStyle(YAML::EmitterStyle::Flow);
  } else if (value.is_string()) {
    node = value.get<std::string>();
  } else if (value.is_boolean()) {
    node = value.get<bool>();
  } else if (value.is_number_integer()) {
    node = value.get<int64_t>();
  } else if (value.is_number()) {
    node = fmt::format("{}", value.get<double>());  // the shortest text that reads back as the same number
  }
  return node;
}

}  // namespace skippr
