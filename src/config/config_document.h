// skippr.yml as an editable document, for the Python API (and any later writer): the RAW values as written, so a
// ${VAR} reference stays a reference and a secret is never written back expanded. Loaded with yaml-cpp, edited,
// emitted with YAML::Emitter, checked by the same strict parse_config the CLI uses before it atomically replaces
// the file. yaml-cpp does not keep comments: only the comment block at the top of the file survives a save.
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/result.h"

namespace skippr {

// A data source or data sink as written: params typed when literal, ${VAR} references as text.
struct RawConnector {
  std::string type;       // e.g. "DuckDB"
  nlohmann::json params;  // an object
};

// A pipeline as written. Unset optional keys are left out of the file (the loader's defaults apply).
struct RawPipeline {
  std::string data_source;  // the connector's name, without "data_sources."
  std::string data_sink;
  nlohmann::json chaos_mode;  // null (unset), a boolean, or a ${VAR} reference
  std::optional<std::string> landing;
  std::optional<std::vector<std::string>> primary_key;
  std::optional<std::vector<std::string>> partition_by;
  nlohmann::json allow_empty_replace;  // null (unset), a boolean, or a ${VAR} reference
};

class ConfigDocument {
 public:
  // Parses the file's YAML (a syntax error is kConfig with file:line). Does not validate: a broken file can be
  // loaded and repaired; save() refuses to write an invalid one.
  static Result<ConfigDocument> load(const std::filesystem::path& file);

  const std::filesystem::path& file() const { return file_; }

  std::vector<std::string> connector_names(bool is_source) const;
  std::vector<std::string> pipeline_names() const;

  // kConfig naming the ones that exist when `name` is absent.
  Result<RawConnector> connector(bool is_source, const std::string& name) const;
  Result<RawPipeline> pipeline(const std::string& name) const;

  // Adds or replaces. The connector type must be one this build has and every param must fit its spec; a
  // pipeline's data_source/data_sink must name connectors of this document and landing must be a known one.
  Status set_connector(bool is_source, const std::string& name, const RawConnector& connector);
  Status set_pipeline(const std::string& name, const RawPipeline& pipeline);

  // The YAML text save() would write.
  std::string emit() const;
  // parse_config on emit(): the CLI's own checks, with ${VAR} expanded (so an unset variable is reported).
  Result<Config> validate() const;
  // validate(), then write_file_atomically. The file on disk is untouched when anything fails.
  Status save() const;

 private:
  ConfigDocument() = default;
  Status put(const char* section, const std::string& name, const YAML::Node& value);
  std::filesystem::path file_;
  std::string leading_comments_;  // the comment lines that open the file, kept on save
  YAML::Node root_;               // a map (empty for an empty file)
};

}  // namespace skippr
