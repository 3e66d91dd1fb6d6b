// A connector parameter's value as the config writer and the Python API hold it: typed (integer, number, boolean,
// string, list, map) when written literally, or a ${VAR} reference kept as text, never expanded. The ParamSpec of
// the connector decides what fits.
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "core/connector.h"

namespace skippr {

// True for text holding a ${VAR} reference: it stands for any type, checked once expanded (at load time).
bool is_env_reference(const nlohmann::json& value);

// nullopt when `value` fits `param`, else what is wrong: "must be an integer (or a ${VAR} reference), got 'abc'".
std::optional<std::string> param_value_problem(const ParamSpec& param, const nlohmann::json& value);

// nullopt when `params` (an object) suits the connector: every key known, every required one present, every value
// fitting. Else the first problem, naming the valid keys: "unknown parameter 'tabel' (did you mean 'table'?); ...".
std::optional<std::string> params_problem(const ConnectorSpec& spec, const nlohmann::json& params);

// The value as written in skippr.yml -> JSON: converted to the param's type when the text is a literal of it
// ("100" -> 100 for an integer), kept as text otherwise (a ${VAR} reference, or a mistake load_config reports).
// `param` is null for a key the connector does not know.
nlohmann::json raw_param_value(const ParamSpec* param, const YAML::Node& node);

// JSON -> a YAML node for the writer: scalars, lists and maps of them.
YAML::Node to_yaml_node(const nlohmann::json& value);

}  // namespace skippr
