#include "engine/command_setup.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "engine/destination_query.h"

namespace skippr {

Result<Config> discover_and_load_config(const std::optional<std::filesystem::path>& explicit_path) {
  auto file = discover_config(explicit_path, std::filesystem::current_path());
  if (!file) return std::unexpected(file.error());
  return load_config(*file);
}

Result<std::optional<Config>> discover_config_if_any(const std::optional<std::filesystem::path>& explicit_path) {
  auto file = discover_config(explicit_path, std::filesystem::current_path());
  if (!file) {
    if (explicit_path) return std::unexpected(file.error());
    return std::optional<Config>();
  }
  auto loaded = load_config(*file);
  if (!loaded) return std::unexpected(loaded.error());
  return std::optional<Config>(std::move(*loaded));
}

Result<Settings> settings_for(const std::optional<Config>& config) {
  // Read after the config is loaded: its .env may set DATA_DIR.
  return config ? settings_from_env(config->file.parent_path()) : settings_from_env();
}

// A relative DATA_DIR was taken from the working folder before it was taken from skippr.yml's folder. A pipeline
// whose state is only where the old rule put it would otherwise start afresh here, and re-read what its WAL held or
// the destination cannot tell it: so say where the state is, and change nothing.
static Status refuse_state_left_in_the_working_folder(const Settings& settings, const std::string& pipeline) {
  const char* env = std::getenv("DATA_DIR");
  const std::filesystem::path relative = env != nullptr && *env != '\0' ? env : "data";
  if (relative.is_absolute()) return ok();
  std::error_code ec;
  const auto old_dir = (std::filesystem::current_path(ec) / relative).lexically_normal();
  if (ec || old_dir == settings.data_dir) return ok();
  const auto old_state = old_dir / "pipelines" / pipeline;
  if (!std::filesystem::exists(old_state, ec) ||
      std::filesystem::exists(settings.data_dir / "pipelines" / pipeline, ec))
    return ok();
  return fail(ErrorKind::kConfig,
              fmt::format("pipeline '{}' has its state in {} (DATA_DIR relative to the working folder, as earlier "
                          "versions took it), but DATA_DIR is now relative to skippr.yml's folder: {}. Move that "
                          "folder there, or set DATA_DIR={} to keep using it",
                          pipeline, old_state.string(), settings.data_dir.string(), old_dir.string()));
}

// Clustered mode keeps a second copy of the WAL so that losing a machine loses no committed batch, and a failover
// replays what the lost primary may already have written. A destination whose retries can repeat rows would turn that
// replay into duplicates, so such sinks are refused, decided by the guarantee each sink declares (not by name). It is
// checked before WAL_STORAGE's own validation, which refuses clustered mode in this build: the user learns first
// what no build would accept.
static Status refuse_sink_clustered_mode_cannot_protect(const Config& config, const std::string& pipeline) {
  const char* storage = std::getenv("WAL_STORAGE");
  if (storage == nullptr || std::string_view(storage) != "clustered") return ok();
  const ConnectorConfig& sink = config.sinks.at(config.pipelines.at(pipeline).data_sink);
  const Guarantee guarantee = sink.spec != nullptr ? sink.spec->guarantee : Guarantee::kNone;
  if (guarantee == Guarantee::kExactlyOnce || guarantee == Guarantee::kOverwriteOnRetry) return ok();
  return fail(ErrorKind::kConfig,
              fmt::format("{}: sink '{}' ({}) is {} on retry, and WAL_STORAGE=clustered accepts only sinks whose "
                          "retries cannot repeat rows; use WAL_STORAGE=disk or s3 for this pipeline",
                          sink.where.str(), sink.name, sink.type, to_string(guarantee)));
}

Result<SyncSetup> prepare_sync(const std::optional<std::filesystem::path>& explicit_path, const std::string& pipeline) {
  auto config = discover_and_load_config(explicit_path);
  if (!config) return std::unexpected(config.error());
  SKIPPR_TRY(config->pipeline(pipeline));
  SKIPPR_TRY(refuse_sink_clustered_mode_cannot_protect(*config, pipeline));
  auto settings = settings_from_env(config->file.parent_path());
  if (!settings) return std::unexpected(settings.error());
  SKIPPR_TRY(refuse_state_left_in_the_working_folder(*settings, pipeline));
  return SyncSetup{std::move(*config), std::move(*settings)};
}

Result<SyncSetup> prepare_serve(const std::optional<std::filesystem::path>& explicit_path) {
  auto config = discover_and_load_config(explicit_path);
  if (!config) return std::unexpected(config.error());
  auto settings = settings_from_env(config->file.parent_path());
  if (!settings) return std::unexpected(settings.error());
  bool chaos = settings->chaos_mode.value_or(false);
  for (const auto& [name, pipeline] : config->pipelines) chaos = chaos || pipeline.chaos_mode;
  if (chaos) {
    return fail(ErrorKind::kConfig,
                "SKIPPR_CHAOS_MODE kills the whole process, so serve refuses it (one pipeline's "
                "chaos would stop them all): use it with skipprd sync");
  }
  // DuckDB locks its file against other processes only: two pipelines of one process on one file would both write
  // it unguarded.
  std::map<std::filesystem::path, std::string> duckdb_files;
  for (const auto& [name, pipeline] : config->pipelines) {
    SKIPPR_TRY(refuse_sink_clustered_mode_cannot_protect(*config, name));
    SKIPPR_TRY(refuse_state_left_in_the_working_folder(*settings, name));
    for (const ConnectorConfig* c :
         {&config->sources.at(pipeline.data_source), &config->sinks.at(pipeline.data_sink)}) {
      if (c->type != "DuckDB" || !c->params.contains("path") || !c->params["path"].is_string()) continue;
      const auto file = std::filesystem::weakly_canonical(c->params["path"].get<std::string>());
      auto [it, inserted] = duckdb_files.emplace(file, name);
      if (!inserted && it->second != name) {
        return fail(ErrorKind::kConfig,
                    fmt::format("pipelines '{}' and '{}' both use the DuckDB file {}; serve runs them in one process, "
                                "where DuckDB cannot lock the file against itself. Give each pipeline its own file, "
                                "or run one of them with skipprd sync",
                                it->second, name, file.string()));
      }
    }
  }
  return SyncSetup{std::move(*config), std::move(*settings)};
}

bool sink_writes_stdout(const Config& config, const std::string& pipeline) {
  auto it = config.pipelines.find(pipeline);
  return it != config.pipelines.end() && config.sinks.at(it->second.data_sink).type == "Stdout";
}

Result<QueryResult> run_statement(std::string_view sql, const std::optional<std::filesystem::path>& explicit_path,
                                  const std::string& pipeline) {
  if (is_destination_query(sql)) {
    auto config = discover_config_if_any(explicit_path);
    if (!config) return std::unexpected(config.error());
    return query_destination(sql, pipeline, *config ? &**config : nullptr);
  }
  if (!pipeline.empty()) {
    return fail(ErrorKind::kConfig, "--pipeline goes with a SELECT (a control statement names its pipeline itself)");
  }
  auto statement = parse_statement(sql);
  if (!statement) return std::unexpected(statement.error());
  auto config = discover_config_if_any(explicit_path);
  if (!config) return std::unexpected(config.error());
  auto settings = settings_for(*config);
  if (!settings) return std::unexpected(settings.error());
  return execute_statement(*statement, *config ? &**config : nullptr, *settings);
}

}  // namespace skippr
