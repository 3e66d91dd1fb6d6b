// A connector's params checked against its ConnectorSpec: the one place that knows what each ParamType accepts.
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string_view>

#include "config/diagnostics.h"
#include "core/connector.h"

namespace skippr::config_detail {

// Returns a JSON object with every known param present when given or defaulted, ${VAR} expanded and kPath values
// made absolute against `base_dir` (the config file's folder). Unknown keys, missing required keys and wrong types
// are recorded in `diag`; `type_key` positions the "missing key" problems. `what` is e.g. "data_sinks.w.DuckDB".
nlohmann::json validate_params(const ConnectorSpec& spec, const YAML::Node& params, const YAML::Node& type_key,
                               std::string_view what, const std::filesystem::path& base_dir, Diagnostics& diag);

}  // namespace skippr::config_detail
