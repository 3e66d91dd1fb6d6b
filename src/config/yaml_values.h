// Typed values out of YAML nodes: every scalar has ${VAR} expanded first, and every problem is recorded in the
// Diagnostics at the node's position, prefixed with `what` (e.g. "data_sinks.warehouse.DuckDB.table").
// nullopt means a problem was recorded.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/diagnostics.h"

namespace skippr::config_detail {

// "a list", "a map", "nothing", "'text'": for "must be X, got Y" messages.
std::string describe(const YAML::Node& node);

std::optional<std::string> read_string(const YAML::Node& node, std::string_view what, Diagnostics& diag);
std::optional<int64_t> read_int(const YAML::Node& node, std::string_view what, Diagnostics& diag);
std::optional<double> read_double(const YAML::Node& node, std::string_view what, Diagnostics& diag);
std::optional<bool> read_bool(const YAML::Node& node, std::string_view what, Diagnostics& diag);
// A sequence of strings; with `allow_single`, a lone scalar counts as a one-element list.
std::optional<std::vector<std::string>> read_string_list(const YAML::Node& node, std::string_view what,
                                                         Diagnostics& diag, bool allow_single = false);
std::optional<std::map<std::string, std::string>> read_string_map(const YAML::Node& node, std::string_view what,
                                                                  Diagnostics& diag);

struct Entry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};
// A map's entries in file order. Records (and skips) non-scalar and duplicate keys, which yaml-cpp would keep
// silently. A null node (an empty section) has no entries; any other non-map is recorded as a problem.
std::vector<Entry> read_entries(const YAML::Node& node, std::string_view what, Diagnostics& diag);

}  // namespace skippr::config_detail
