// What a command does before it runs: find skippr.yml (explicit path, else SKIPPR_CONFIG_FILE, else the working
// folder or its nearest parent), load it, read the settings from the environment. The CLI and the Python module
// share these, so the same mistake gets the same sentence from both.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "engine/control.h"

namespace skippr {

Result<Config> discover_and_load_config(const std::optional<std::filesystem::path>& explicit_path);

// The config when one is found (an explicit path that is missing is an error); nullopt when there is none.
Result<std::optional<Config>> discover_config_if_any(const std::optional<std::filesystem::path>& explicit_path);
// The settings, a relative DATA_DIR taken from the config's folder (the working folder without a config).
Result<Settings> settings_for(const std::optional<Config>& config);

struct SyncSetup {
  Config config;
  Settings settings;
};
// The config, the settings, and a check that `pipeline` exists in the config.
Result<SyncSetup> prepare_sync(const std::optional<std::filesystem::path>& explicit_path, const std::string& pipeline);

// The config and the settings for `serve`: every pipeline checked as prepare_sync checks one.
Result<SyncSetup> prepare_serve(const std::optional<std::filesystem::path>& explicit_path);

// True when the pipeline's sink writes to stdout itself, so run events must go elsewhere.
bool sink_writes_stdout(const Config& config, const std::string& pipeline);

// Parses and runs one control-language statement. Without a skippr.yml (and no explicit path) it still runs
// against DATA_DIR alone. A SELECT (and the like) reads `pipeline`'s DuckDB destination instead
// (engine/destination_query.h).
Result<QueryResult> run_statement(std::string_view sql, const std::optional<std::filesystem::path>& explicit_path,
                                  const std::string& pipeline = {});

}  // namespace skippr
