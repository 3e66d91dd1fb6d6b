// pipelines: `name: { data_source, data_sink, chaos_mode, landing, primary_key, partition_by, allow_empty_replace }`.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "config/sections.h"
#include "config/suggest.h"
#include "config/yaml_values.h"

namespace skippr {

bool is_valid_pipeline_name(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

}  // namespace skippr

namespace skippr::config_detail {

namespace {

constexpr std::array kLandings = {Landing::kAppend, Landing::kMergeByKey, Landing::kReplacePartition,
                                  Landing::kReplaceTable};

std::optional<Landing> landing_from_string(std::string_view text) {
  for (Landing l : kLandings) {
    if (text == to_string(l)) return l;
  }
  return std::nullopt;
}

std::vector<std::string> landing_names() {
  std::vector<std::string> names;
  for (Landing l : kLandings) names.emplace_back(to_string(l));
  return names;
}

// "data_sources.sample" or bare "sample" -> "sample", checked against the names declared in `section`.
std::optional<std::string> read_reference(const YAML::Node& node, std::string_view what, std::string_view section,
                                          std::string_view other_section, const std::vector<std::string>& declared,
                                          Diagnostics& diag) {
  auto text = read_string(node, what, diag);
  if (!text) return std::nullopt;
  std::string name = *text;
  if (const std::string prefix = fmt::format("{}.", section); name.starts_with(prefix)) {
    name = name.substr(prefix.size());
  } else if (name.starts_with(fmt::format("{}.", other_section))) {
    diag.add(node.Mark(), fmt::format("{}: '{}' is under {}, but this key needs one of {}; write {}.<name>", what,
                                      *text, other_section, section, section));
    return std::nullopt;
  }
  if (std::ranges::find(declared, name) == declared.end()) {
    std::string message = fmt::format("{}: '{}' is not defined under {}", what, name, section);
    if (auto match = closest_match(name, declared); !match.empty())
      message += fmt::format("; did you mean '{}'?", match);
    message += declared.empty() ? fmt::format("; {} defines none, add one", section)
                                : fmt::format("; it has: {}", join(declared));
    diag.add(node.Mark(), std::move(message));
    return std::nullopt;
  }
  return name;
}

// Returns nullopt when a problem was recorded.
std::optional<PipelineConfig> read_pipeline(const Entry& entry, const std::vector<std::string>& declared_sources,
                                            const std::vector<std::string>& declared_sinks,
                                            const std::map<std::string, ConnectorConfig>& sources, Diagnostics& diag) {
  static const std::vector<std::string> kKeys = {"data_source", "data_sink",    "chaos_mode",         "landing",
                                                 "primary_key", "partition_by", "allow_empty_replace"};
  const std::string what = fmt::format("pipelines.{}", entry.key);
  if (entry.value.IsNull()) {
    diag.add(entry.key_node.Mark(), fmt::format("{}: is empty; it needs data_source and data_sink", what));
    return std::nullopt;
  }
  PipelineConfig pipeline;
  pipeline.name = entry.key;
  pipeline.where = diag.location(entry.key_node.Mark());
  bool ok = entry.value.IsMap();  // read_entries reports a non-map
  if (!is_valid_pipeline_name(entry.key)) {
    diag.add(entry.key_node.Mark(), fmt::format("{}: a pipeline name may hold only letters, digits, '_', '.' and "
                                                "'-' (and is not '.' or '..'): it names a folder in DATA_DIR",
                                                what));
    ok = false;
  }
  std::map<std::string, Entry> given;
  for (auto& field : read_entries(entry.value, what, diag)) {
    if (std::ranges::find(kKeys, field.key) == kKeys.end()) {
      diag.add(field.key_node.Mark(),
               fmt::format("{}: unknown key '{}'{}", what, field.key, suggestion(field.key, kKeys, "pipeline keys")));
      ok = false;
      continue;
    }
    given.emplace(field.key, field);
  }
  if (!entry.value.IsMap()) return std::nullopt;

  auto reference = [&](const char* key, std::string_view section, std::string_view other,
                       const std::vector<std::string>& declared, std::string& out) {
    auto it = given.find(key);
    if (it == given.end()) {
      diag.add(entry.key_node.Mark(),
               fmt::format("{}: missing required key '{}'; add {}: {}.<name>", what, key, key, section));
      ok = false;
    } else if (auto name =
                   read_reference(it->second.value, fmt::format("{}.{}", what, key), section, other, declared, diag)) {
      out = std::move(*name);
    } else {
      ok = false;
    }
  };
  reference("data_source", "data_sources", "data_sinks", declared_sources, pipeline.data_source);
  reference("data_sink", "data_sinks", "data_sources", declared_sinks, pipeline.data_sink);

  if (auto it = given.find("chaos_mode"); it != given.end()) {
    if (auto v = read_bool(it->second.value, what + ".chaos_mode", diag)) {
      pipeline.chaos_mode = *v;
    } else {
      ok = false;
    }
  }
  if (auto it = given.find("allow_empty_replace"); it != given.end()) {
    if (auto v = read_bool(it->second.value, what + ".allow_empty_replace", diag)) {
      pipeline.allow_empty_replace = *v;
    } else {
      ok = false;
    }
  }
  bool primary_key_ok = true;
  if (auto it = given.find("primary_key"); it != given.end()) {
    if (auto v = read_string_list(it->second.value, what + ".primary_key", diag, /*allow_single=*/true)) {
      pipeline.primary_key = std::move(*v);
    } else {
      primary_key_ok = ok = false;
    }
  }
  if (auto it = given.find("partition_by"); it != given.end()) {
    if (auto v = read_string_list(it->second.value, what + ".partition_by", diag, /*allow_single=*/true)) {
      pipeline.partition_by = std::move(*v);
    } else {
      ok = false;
    }
  }
  if (auto it = given.find("landing"); it != given.end()) {
    const YAML::Node& node = it->second.value;
    auto text = read_string(node, what + ".landing", diag);
    auto landing = text ? landing_from_string(*text) : std::nullopt;
    if (!text) {
      ok = false;
    } else if (!landing) {
      const auto names = landing_names();
      const auto match = closest_match(*text, names);
      diag.add(node.Mark(), fmt::format("{}.landing: unknown landing '{}'{}; it must be one of: {}", what, *text,
                                        match.empty() ? "" : fmt::format("; did you mean '{}'?", match), join(names)));
      ok = false;
    } else {
      pipeline.landing = *landing;
      pipeline.landing_given = true;
      // Only replace_table empties a table when a sync reads nothing (replace_partition replaces the partitions
      // a sync read, none then), so the key means nothing with another landing.
      if (given.contains("allow_empty_replace") && *landing != Landing::kReplaceTable) {
        diag.add(given.at("allow_empty_replace").key_node.Mark(),
                 fmt::format("{}.allow_empty_replace: only landing replace_table empties the table when a sync reads "
                             "nothing, and this pipeline lands with {}; remove the key",
                             what, *text));
        ok = false;
      }
      // A source that keys each stream itself (several tables through CDC) needs no key from the pipeline.
      const auto source = sources.find(pipeline.data_source);
      const bool source_keys = source != sources.end() && source_keys_streams(source->second);
      if (*landing == Landing::kMergeByKey && primary_key_ok && pipeline.primary_key.empty() && !source_keys) {
        diag.add(node.Mark(), fmt::format("{}.landing: merge_by_key needs the key to merge on; add primary_key: "
                                          "[column, ...]",
                                          what));
        ok = false;
      }
    }
  }
  if (!ok) return std::nullopt;
  return pipeline;
}

}  // namespace

void read_pipelines(const YAML::Node& section, const std::vector<std::string>& declared_sources,
                    const std::vector<std::string>& declared_sinks,
                    const std::map<std::string, ConnectorConfig>& sources, Diagnostics& diag,
                    std::map<std::string, PipelineConfig>& out) {
  for (const auto& entry : read_entries(section, "pipelines", diag)) {
    if (auto pipeline = read_pipeline(entry, declared_sources, declared_sinks, sources, diag)) {
      out.emplace(entry.key, std::move(*pipeline));
    }
  }
}

}  // namespace skippr::config_detail
