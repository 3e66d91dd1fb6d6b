#include "engine/command_setup.h"

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

Result<SyncSetup> prepare_sync(const std::optional<std::filesystem::path>& explicit_path, const std::string& pipeline) {
  auto config = discover_and_load_config(explicit_path);
  if (!config) return std::unexpected(config.error());
  auto settings = settings_from_env(config->file.parent_path());
  if (!settings) return std::unexpected(settings.error());
  SKIPPR_TRY(config->pipeline(pipeline));
  return SyncSetup{std::move(*config), std::move(*settings)};
}

bool sink_writes_stdout(const Config& config, const std::string& pipeline) {
  auto it = config.pipelines.find(pipeline);
  return it != config.pipelines.end() && config.sinks.at(it->second.data_sink).type == "Stdout";
}

Result<QueryResult> run_statement(std::string_view sql, const std::optional<std::filesystem::path>& explicit_path) {
  auto statement = parse_statement(sql);
  if (!statement) return std::unexpected(statement.error());
  auto config = discover_config_if_any(explicit_path);
  if (!config) return std::unexpected(config.error());
  auto settings = settings_for(*config);
  if (!settings) return std::unexpected(settings.error());
  return execute_statement(*statement, *config ? &**config : nullptr, *settings);
}

}  // namespace skippr
