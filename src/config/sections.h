// The three top-level sections of skippr.yml. Each records its problems in `diag` and keeps going, so one load
// reports every mistake.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/diagnostics.h"

namespace skippr::config_detail {

// data_sources (is_source) or data_sinks. `declared` receives every name in the section, valid or not, so a
// pipeline naming a broken connector is not also reported as naming a missing one.
void read_connectors(const YAML::Node& section, bool is_source, const std::filesystem::path& base_dir,
                     Diagnostics& diag, std::map<std::string, ConnectorConfig>& out,
                     std::vector<std::string>& declared);

// `sources`: the valid ones, to tell whether a source keys its streams itself (merge_by_key then needs no primary_key).
void read_pipelines(const YAML::Node& section, const std::vector<std::string>& declared_sources,
                    const std::vector<std::string>& declared_sinks,
                    const std::map<std::string, ConnectorConfig>& sources, Diagnostics& diag,
                    std::map<std::string, PipelineConfig>& out);

}  // namespace skippr::config_detail
