// The control language of `skipprd query --sql`: RESET PIPELINE, SHOW PIPELINES, SHOW PIPELINE, SHOW STATS FOR,
// ENABLE PIPELINE, DISABLE PIPELINE, RESYNC TABLE <pipeline>.<stream> and its unambiguous spelling RESYNC STREAM
// <stream> IN PIPELINE <name>. Case-insensitive, optional trailing ';'.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace skippr {

enum class StatementKind {
  kResetPipeline,
  kShowPipelines,
  kShowPipeline,
  kShowStats,
  kEnablePipeline,
  kDisablePipeline,
  kResyncStream
};

struct Statement {
  StatementKind kind;
  std::string pipeline;  // empty for SHOW PIPELINES, and for RESYNC TABLE until the configuration splits `stream`
  std::string stream;    // RESYNC's (RESYNC TABLE: "<pipeline>.<stream>")
};

// kConfig naming what was expected when the text is not one of the statements.
Result<Statement> parse_statement(std::string_view sql);

struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::string message;  // for statements that change something
};

// `config` may be null when no skippr.yml was found (SHOW PIPELINES then lists what DATA_DIR holds).
Result<QueryResult> execute_statement(const Statement& statement, const Config* config, const Settings& settings);

}  // namespace skippr
