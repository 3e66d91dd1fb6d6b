// data_sources / data_sinks: `name: { TypeName: { params } }`.
#include <fmt/format.h>

#include "config/connector_params.h"
#include "config/sections.h"
#include "config/suggest.h"
#include "config/yaml_values.h"

namespace skippr::config_detail {

namespace {

std::vector<std::string> type_names(bool is_source) {
  std::vector<std::string> names;
  for (const auto& spec : connector_registry()) {
    if (spec.is_source == is_source) names.push_back(spec.type_name);
  }
  return names;
}

std::string unknown_type_message(std::string_view what, const std::string& type, bool is_source) {
  const char* kind = is_source ? "source" : "sink";
  const auto known = type_names(is_source);
  std::string message = fmt::format("{}: unknown {} type '{}'", what, kind, type);
  if (find_connector(type, !is_source) != nullptr) {
    message += fmt::format(" ('{}' is a {}, so it belongs under {})", type, is_source ? "sink" : "source",
                           is_source ? "data_sinks" : "data_sources");
  } else if (auto match = closest_match(type, known); !match.empty()) {
    message += fmt::format("; did you mean '{}'?", match);
  }
  message += fmt::format("; known {} types: {}", kind, known.empty() ? "none" : join(known));
  return message;
}

}  // namespace

void read_connectors(const YAML::Node& section, bool is_source, const std::filesystem::path& base_dir,
                     Diagnostics& diag, std::map<std::string, ConnectorConfig>& out,
                     std::vector<std::string>& declared) {
  const char* section_name = is_source ? "data_sources" : "data_sinks";
  for (const auto& entry : read_entries(section, section_name, diag)) {
    declared.push_back(entry.key);
    const std::string what = fmt::format("{}.{}", section_name, entry.key);
    const YAML::Node& body = entry.value;
    if (!body.IsMap() || body.size() != 1) {
      const auto known = type_names(is_source);
      const std::string example = known.empty() ? "Type" : known.front();
      const std::string got = body.IsMap() && body.size() > 1 ? fmt::format("{} keys", body.size()) : describe(body);
      diag.add(body.IsNull() ? entry.key_node.Mark() : body.Mark(),
               fmt::format("{}: must hold exactly one key, the connector type, got {}; write `{}: {{ {}: {{ ... }} }}` "
                           "(known {} types: {})",
                           what, got, entry.key, example, is_source ? "source" : "sink", join(known)));
      continue;
    }
    const YAML::Node type_key = body.begin()->first;
    const YAML::Node params = body.begin()->second;
    if (!type_key.IsScalar()) {
      diag.add(type_key.Mark(), unknown_type_message(what, describe(type_key), is_source));
      continue;
    }
    const ConnectorSpec* spec = find_connector(type_key.Scalar(), is_source);
    if (spec == nullptr) {
      diag.add(type_key.Mark(), unknown_type_message(what, type_key.Scalar(), is_source));
      continue;
    }
    ConnectorConfig connector;
    connector.name = entry.key;
    connector.type = spec->type_name;
    connector.spec = spec;
    connector.where = diag.location(entry.key_node.Mark());
    connector.params =
        validate_params(*spec, params, type_key, fmt::format("{}.{}", what, spec->type_name), base_dir, diag);
    out.emplace(entry.key, std::move(connector));
  }
}

}  // namespace skippr::config_detail
