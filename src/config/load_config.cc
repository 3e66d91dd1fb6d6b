// load_config: .env, then YAML, then the three sections; every problem collected into one kConfig error.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "config/diagnostics.h"
#include "config/dotenv.h"
#include "config/sections.h"
#include "config/suggest.h"
#include "config/yaml_values.h"
#include "core/identifier_limit.h"

namespace skippr {

namespace {

Result<std::string> read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return fail(ErrorKind::kConfig, fmt::format("{}: cannot read the config file ({}); check the path, or pass "
                                                "--config <file>",
                                                file.string(), std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A pipeline without a landing of its own takes its source's default (GoogleAnalytics: replace_partition on date);
// replace_partition needs partition columns, which only it uses.
void apply_source_landing(PipelineConfig& pipeline, const Config& config, config_detail::Diagnostics& diag) {
  const auto source = config.sources.find(pipeline.data_source);
  const ConnectorSpec* spec = source == config.sources.end() ? nullptr : source->second.spec;

  if (!pipeline.landing_given && spec && spec->default_landing) {
    pipeline.landing = *spec->default_landing;
    if (pipeline.partition_by.empty()) pipeline.partition_by = spec->default_partition_by;
  }
  const std::string what = fmt::format("pipelines.{}", pipeline.name);
  if (pipeline.landing == Landing::kReplacePartition && pipeline.partition_by.empty()) {
    diag.add(pipeline.where, fmt::format("{}: landing replace_partition needs the columns that make a partition; add "
                                         "partition_by: [column, ...]",
                                         what));
  } else if (pipeline.landing != Landing::kReplacePartition && !pipeline.partition_by.empty()) {
    diag.add(pipeline.where, fmt::format("{}: partition_by is used by landing replace_partition only, and this "
                                         "pipeline lands with {}; remove it or set landing: replace_partition",
                                         what, to_string(pipeline.landing)));
  }
}

void read_document(const YAML::Node& root, Config& config, config_detail::Diagnostics& diag) {
  using namespace config_detail;
  static const std::vector<std::string> kSections = {"data_sources", "data_sinks", "pipelines"};
  if (root.IsNull()) {
    diag.add(1, 1, "the file is empty; define data_sources, data_sinks and pipelines in it");
    return;
  }
  if (!root.IsMap()) {
    diag.add(root.Mark(),
             fmt::format("must be a map with data_sources, data_sinks and pipelines, got {}", describe(root)));
    return;
  }
  YAML::Node sources, sinks, pipelines;
  for (const auto& entry : read_entries(root, "top level", diag)) {
    if (entry.key == "data_sources") {
      sources = entry.value;
    } else if (entry.key == "data_sinks") {
      sinks = entry.value;
    } else if (entry.key == "pipelines") {
      pipelines = entry.value;
    } else {
      diag.add(entry.key_node.Mark(),
               fmt::format("unknown top-level key '{}'{}", entry.key, suggestion(entry.key, kSections, "sections")));
    }
  }
  const std::filesystem::path base_dir = config.file.parent_path();
  std::vector<std::string> source_names, sink_names;
  read_connectors(sources, /*is_source=*/true, base_dir, diag, config.sources, source_names);
  read_connectors(sinks, /*is_source=*/false, base_dir, diag, config.sinks, sink_names);
  read_pipelines(pipelines, source_names, sink_names, config.sources, diag, config.pipelines);
  for (auto& [name, pipeline] : config.pipelines) apply_source_landing(pipeline, config, diag);
}

// The sink types that land several streams, for messages.
std::string stream_sink_types() {
  std::vector<std::string> types;
  for (const auto& spec : connector_registry()) {
    if (!spec.is_source && spec.lands_streams) types.push_back(spec.type_name);
  }
  return config_detail::join(types);
}

// Every check a connector's factory makes (a negative row count, an empty table, a landing the sink lacks) runs
// here too, for each pipeline, so `validate` and Python's save() catch what `sync` would refuse, with the
// connector's file:line, before anything is read or written. Factories only check and construct: they open nothing.
void check_connectors(const Config& config, config_detail::Diagnostics& diag) {
  for (const auto& [name, pipeline] : config.pipelines) {
    const ConnectorConfig& source = config.sources.at(pipeline.data_source);
    const ConnectorConfig& sink = config.sinks.at(pipeline.data_sink);
    auto report = [&](const ConnectorConfig& connector, const Error& e) {
      if (e.kind == ErrorKind::kConfig) diag.add(connector.where, fmt::format("pipeline '{}': {}", name, e.message));
    };
    auto made_source = source.spec->make_source(connector_context(pipeline, source, {}));
    if (!made_source) {
      report(source, made_source.error());
    } else if ((*made_source)->streaming() &&
               (pipeline.landing == Landing::kReplacePartition || pipeline.landing == Landing::kReplaceTable)) {
      diag.add(pipeline.where, fmt::format("pipelines.{}: landing {} replaces what each sync read, and source '{}' "
                                           "streams without ever finishing a pass; use append or merge_by_key for it",
                                           name, to_string(pipeline.landing), pipeline.data_source));
    }
    ConnectorContext sink_context = connector_context(pipeline, sink, {});
    sink_context.source_streams = made_source && (*made_source)->names_streams();
    sink_context.source_keys = source_keys_streams(source);
    if (sink_context.source_streams && !sink.spec->lands_streams) {
      diag.add(sink.where, fmt::format("pipeline '{}': source '{}' names several streams, and a {} sink lands one "
                                       "table; land them in a sink that gives each stream its own table ({}), or "
                                       "give the source one stream",
                                       name, pipeline.data_source, sink.spec->type_name, stream_sink_types()));
      continue;
    }
    if (auto made = sink.spec->make_sink(sink_context); !made) report(sink, made.error());
  }
}

}  // namespace

Result<Config> load_config(const std::filesystem::path& file) {
  auto text = read_text(std::filesystem::absolute(file).lexically_normal());
  if (!text) return std::unexpected(text.error());
  return parse_config(file, std::move(*text));
}

Result<Config> parse_config(const std::filesystem::path& file, std::string text) {
  Config config;
  config.file = std::filesystem::absolute(file).lexically_normal();
  config.raw_yaml = std::move(text);

  config_detail::Diagnostics diag(file.string());
  const std::string env_display = (file.parent_path() / ".env").string();
  for (const auto& problem : config_detail::load_dotenv(config.file.parent_path() / ".env")) {
    diag.add(SourceLocation{env_display, problem.line, 1}, problem.message);
  }

  // yaml-cpp reports through exceptions; none may cross this boundary.
  try {
    const YAML::Node root = YAML::Load(config.raw_yaml);
    read_document(root, config, diag);
  } catch (const YAML::ParserException& e) {
    diag.add(e.mark, fmt::format("invalid YAML: {}; fix the syntax here", e.msg));
  } catch (const YAML::Exception& e) {
    diag.add(e.mark, fmt::format("cannot read this: {}", e.msg));
  }
  if (diag.empty()) check_connectors(config, diag);
  if (!diag.empty()) return std::unexpected(diag.to_error());
  return config;
}

bool source_keys_streams(const ConnectorConfig& source) {
  return source.spec && source.spec->keys_streams && source.spec->keys_streams(source.params);
}

bool source_resyncs_streams(const ConnectorConfig& source) {
  return source.spec && source.spec->resyncs_streams && source.spec->resyncs_streams(source.params);
}

ConnectorContext connector_context(const PipelineConfig& pipeline, const ConnectorConfig& connector,
                                   const std::filesystem::path& pipeline_dir) {
  ConnectorContext ctx;
  ctx.name = connector.name;
  ctx.pipeline = pipeline.name;
  ctx.params = connector.params;
  ctx.pipeline_dir = pipeline_dir;
  ctx.landing = pipeline.landing;
  // A sink sees the batch's fields under the names its destination can keep (engine/sync.cc), so the key and
  // partition fields it is told about carry the same names.
  const size_t limit = connector.spec && !connector.spec->is_source ? connector.spec->max_identifier_bytes : 0;
  ctx.primary_key = fit_identifiers(pipeline.primary_key, limit);
  ctx.partition_by = fit_identifiers(pipeline.partition_by, limit);
  return ctx;
}

Result<const PipelineConfig*> Config::pipeline(const std::string& name) const {
  if (auto it = pipelines.find(name); it != pipelines.end()) return &it->second;
  std::vector<std::string> names;
  for (const auto& [n, _] : pipelines) names.push_back(n);
  return fail(ErrorKind::kConfig, fmt::format("pipeline '{}' is not in {}; {}", name, file.string(),
                                              names.empty() ? "it has none, add one under pipelines:"
                                                            : fmt::format("it has: {}", config_detail::join(names))));
}

}  // namespace skippr
