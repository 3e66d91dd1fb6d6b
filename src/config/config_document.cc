#include "config/config_document.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "config/param_values.h"
#include "config/parse_text.h"
#include "config/suggest.h"
#include "core/env.h"

namespace skippr {

namespace {

using config_detail::join;

const char* section_name(bool is_source) { return is_source ? "data_sources" : "data_sinks"; }

// The comment lines (and blank lines among them) that open the file: a header worth keeping across saves.
std::string leading_comment_block(const std::string& text) {
  std::istringstream in(text);
  std::string block, pending_blanks;
  for (std::string line; std::getline(in, line);) {
    const auto trimmed = config_detail::trim(line);
    if (trimmed.empty()) {
      pending_blanks += "\n";
    } else if (trimmed.starts_with('#')) {
      block += pending_blanks + line + "\n";
      pending_blanks.clear();
    } else {
      break;
    }
  }
  return block;
}

// The value under `key`, when `map` is a map that has it. yaml-cpp throws on any use of a missing key's node.
std::optional<YAML::Node> child(const YAML::Node& map, const std::string& key) {
  if (!map.IsMap()) return std::nullopt;
  const YAML::Node value = map[key];
  if (!value.IsDefined()) return std::nullopt;
  return value;
}

std::vector<std::string> keys_of(const std::optional<YAML::Node>& map) {
  std::vector<std::string> keys;
  if (!map || !map->IsMap()) return keys;
  for (const auto& entry : *map) {
    if (entry.first.IsScalar()) keys.push_back(entry.first.Scalar());
  }
  return keys;
}

std::string names_sentence(const std::vector<std::string>& names) {
  return names.empty() ? "it has none" : fmt::format("it has: {}", join(names));
}

std::string strip_prefix(std::string text, std::string_view prefix) {
  if (text.starts_with(prefix)) text.erase(0, prefix.size());
  return text;
}

}  // namespace

Result<ConfigDocument> ConfigDocument::load(const std::filesystem::path& file) {
  ConfigDocument doc;
  doc.file_ = std::filesystem::absolute(file).lexically_normal();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(doc.file_, ec)) {
    return fail(ErrorKind::kConfig,
                fmt::format("config file {} not found; check the path (Config.discover() finds the nearest skippr.yml)",
                            doc.file_.string()));
  }
  auto text = default_env().read_file(doc.file_);
  if (!text) return std::unexpected(text.error());
  doc.leading_comments_ = leading_comment_block(*text);
  // yaml-cpp reports through exceptions; none may cross this boundary.
  try {
    doc.root_ = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return fail(ErrorKind::kConfig, fmt::format("{}:{}:{}: invalid YAML: {}; fix the syntax here", doc.file_.string(),
                                                e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (doc.root_.IsNull()) doc.root_ = YAML::Node(YAML::NodeType::Map);
  if (!doc.root_.IsMap()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: must be a map with data_sources, data_sinks and pipelines", doc.file_.string()));
  }
  return doc;
}

std::vector<std::string> ConfigDocument::connector_names(bool is_source) const {
  return keys_of(child(root_, section_name(is_source)));
}

std::vector<std::string> ConfigDocument::pipeline_names() const { return keys_of(child(root_, "pipelines")); }

Result<RawConnector> ConfigDocument::connector(bool is_source, const std::string& name) const {
  const auto section = child(root_, section_name(is_source));
  const auto found = section ? child(*section, name) : std::nullopt;
  const std::string what = fmt::format("{}.{}", section_name(is_source), name);
  if (!found) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} has no {} '{}'; {}", file_.string(), is_source ? "data source" : "data sink", name,
                            names_sentence(connector_names(is_source))));
  }
  const YAML::Node body = *found;
  if (!body.IsMap() || body.size() != 1 || !body.begin()->first.IsScalar()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: {} must hold exactly one key, the connector type; fix it there",
                                                file_.string(), what));
  }
  RawConnector out;
  out.type = body.begin()->first.Scalar();
  const YAML::Node params = body.begin()->second;
  const ConnectorSpec* spec = find_connector(out.type, is_source);
  out.params = nlohmann::json::object();
  if (params.IsMap()) {
    for (const auto& entry : params) {
      const std::string key = entry.first.Scalar();
      const ParamSpec* param = nullptr;
      if (spec != nullptr) {
        auto it = std::ranges::find(spec->params, key, &ParamSpec::name);
        if (it != spec->params.end()) param = &*it;
      }
      out.params[key] = raw_param_value(param, entry.second);
    }
  } else if (!params.IsNull()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: {}.{} must be a map of parameters; fix it there", file_.string(), what, out.type));
  }
  return out;
}

Result<RawPipeline> ConfigDocument::pipeline(const std::string& name) const {
  const auto section = child(root_, "pipelines");
  const auto found = section ? child(*section, name) : std::nullopt;
  if (!found) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} has no pipeline '{}'; {}", file_.string(), name, names_sentence(pipeline_names())));
  }
  const YAML::Node body = *found;
  if (!body.IsMap()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: pipelines.{} must be a map; fix it there", file_.string(), name));
  }
  auto scalar = [&](const char* key) -> std::optional<std::string> {
    const auto v = child(body, key);
    return v && v->IsScalar() ? std::optional(v->Scalar()) : std::nullopt;
  };
  RawPipeline out;
  out.data_source = strip_prefix(scalar("data_source").value_or(""), "data_sources.");
  out.data_sink = strip_prefix(scalar("data_sink").value_or(""), "data_sinks.");
  auto flag = [&](const char* key) {
    const auto node = child(body, key);
    if (!node || !node->IsScalar()) return nlohmann::json();
    ParamSpec spec;
    spec.name = key;
    spec.type = ParamType::kBool;
    return raw_param_value(&spec, *node);
  };
  out.chaos_mode = flag("chaos_mode");
  out.allow_empty_replace = flag("allow_empty_replace");
  out.landing = scalar("landing");
  // A list of column names, or one name alone.
  auto columns = [&](const char* key) -> std::optional<std::vector<std::string>> {
    const auto node = child(body, key);
    if (node && node->IsScalar()) return std::vector<std::string>{node->Scalar()};
    if (!node || !node->IsSequence()) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& column : *node) names.push_back(column.IsScalar() ? column.Scalar() : "");
    return names;
  };
  out.primary_key = columns("primary_key");
  out.partition_by = columns("partition_by");
  return out;
}

Status ConfigDocument::set_connector(bool is_source, const std::string& name, const RawConnector& connector) {
  const char* kind = is_source ? "source" : "sink";
  if (name.empty()) return fail(ErrorKind::kConfig, fmt::format("a data {} needs a non-empty name", kind));
  const ConnectorSpec* spec = find_connector(connector.type, is_source);
  if (spec == nullptr) {
    std::vector<std::string> known;
    for (const auto& s : connector_registry()) {
      if (s.is_source == is_source) known.push_back(s.type_name);
    }
    return fail(ErrorKind::kConfig,
                fmt::format("unknown {} type '{}'; this build has: {}", kind, connector.type, join(known)));
  }
  if (auto problem = params_problem(*spec, connector.params)) {
    return fail(ErrorKind::kConfig, fmt::format("{}.{}: {}", section_name(is_source), name, *problem));
  }
  YAML::Node body;
  body[spec->type_name] = to_yaml_node(connector.params);
  return put(section_name(is_source), name, body);
}

Status ConfigDocument::set_pipeline(const std::string& name, const RawPipeline& pipeline) {
  if (name.empty()) return fail(ErrorKind::kConfig, "a pipeline needs a non-empty name");
  const std::string what = fmt::format("pipelines.{}", name);
  auto check_reference = [&](bool is_source, const std::string& ref) -> Status {
    const auto names = connector_names(is_source);
    if (std::ranges::find(names, ref) != names.end()) return ok();
    const auto match = config_detail::closest_match(ref, names);
    return fail(ErrorKind::kConfig,
                fmt::format("{}: data {} '{}' is not defined in {}{}; {} (define it first with data_{}(name, ...))",
                            what, is_source ? "source" : "sink", ref, file_.string(),
                            match.empty() ? "" : fmt::format(" (did you mean '{}'?)", match), names_sentence(names),
                            is_source ? "source" : "sink"));
  };
  SKIPPR_TRY(check_reference(true, pipeline.data_source));
  SKIPPR_TRY(check_reference(false, pipeline.data_sink));
  for (const auto& [key, value] : {std::pair{"chaos_mode", &pipeline.chaos_mode},
                                   std::pair{"allow_empty_replace", &pipeline.allow_empty_replace}}) {
    if (!value->is_null() && !value->is_boolean() && !is_env_reference(*value)) {
      return fail(ErrorKind::kConfig, fmt::format("{}: {} must be true or false (or a ${{VAR}} reference), got {}",
                                                  what, key, value->dump()));
    }
  }
  if (pipeline.landing) {
    std::vector<std::string> landings;
    for (Landing l : {Landing::kAppend, Landing::kMergeByKey, Landing::kReplacePartition, Landing::kReplaceTable}) {
      landings.emplace_back(to_string(l));
    }
    if (std::ranges::find(landings, *pipeline.landing) == landings.end() && !is_env_reference(*pipeline.landing)) {
      return fail(ErrorKind::kConfig, fmt::format("{}: unknown landing '{}'; it must be one of: {}", what,
                                                  *pipeline.landing, join(landings)));
    }
  }
  YAML::Node body(YAML::NodeType::Map);
  body["data_source"] = fmt::format("data_sources.{}", pipeline.data_source);
  body["data_sink"] = fmt::format("data_sinks.{}", pipeline.data_sink);
  if (!pipeline.chaos_mode.is_null()) body["chaos_mode"] = to_yaml_node(pipeline.chaos_mode);
  if (pipeline.landing) body["landing"] = *pipeline.landing;
  if (pipeline.primary_key) body["primary_key"] = to_yaml_node(*pipeline.primary_key);
  if (pipeline.partition_by) body["partition_by"] = to_yaml_node(*pipeline.partition_by);
  if (!pipeline.allow_empty_replace.is_null()) body["allow_empty_replace"] = to_yaml_node(pipeline.allow_empty_replace);
  return put("pipelines", name, body);
}

Status ConfigDocument::put(const char* section, const std::string& name, const YAML::Node& value) {
  if (const auto existing = child(root_, section); existing && !existing->IsMap() && !existing->IsNull()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: {} must be a map of names, it is not; fix it there", file_.string(), section));
  }
  root_[section][name] = value;  // replaces in place, so an edited entry keeps its position
  return ok();
}

std::string ConfigDocument::emit() const {
  // One top-level section at a time, so a blank line can separate them as in a hand-written file.
  std::string text = leading_comments_;
  for (const auto& section : root_) {
    YAML::Emitter out;
    out << YAML::BeginMap << YAML::Key << section.first << YAML::Value << section.second << YAML::EndMap;
    if (!text.empty()) text += "\n";
    text += out.c_str();
    text += "\n";
  }
  return text;
}

Result<Config> ConfigDocument::validate() const { return parse_config(file_, emit()); }

Status ConfigDocument::save() const {
  const std::string text = emit();
  auto config = parse_config(file_, text);
  if (!config) {
    return fail(config.error().kind,
                fmt::format("not saved, {} is unchanged; the configuration as it would be written has "
                            "these problems (line numbers refer to the text that would be written):\n{}",
                            file_.string(), config.error().message));
  }
  return replace_kept_file(file_, text);
}

}  // namespace skippr
