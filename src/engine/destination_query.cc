#include "engine/destination_query.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>

#include "clients/duckdb/duckdb_client.h"
#include "core/ascii.h"

namespace skippr {
namespace {

constexpr std::string_view kDuckDb = "DuckDB";

std::string first_word(std::string_view sql) {
  size_t begin = 0;
  while (begin < sql.size() && std::isspace(static_cast<unsigned char>(sql[begin]))) ++begin;
  size_t end = begin;
  while (end < sql.size() && std::isalpha(static_cast<unsigned char>(sql[end]))) ++end;
  return ascii_lowercase(sql.substr(begin, end - begin));
}

Result<std::string> pick_pipeline(const std::string& pipeline, const Config& config) {
  const auto candidates = duckdb_pipelines(config);
  if (!pipeline.empty()) {
    auto found = config.pipeline(pipeline);
    if (!found) return std::unexpected(found.error());
    if (config.sinks.at((*found)->data_sink).type != kDuckDb) {
      return fail(ErrorKind::kConfig,
                  fmt::format("pipeline '{}' lands in {}, not a DuckDB file: query it with that service's own tools",
                              pipeline, config.sinks.at((*found)->data_sink).type));
    }
    return pipeline;
  }
  if (candidates.size() == 1) return candidates.front();
  if (candidates.empty()) {
    return fail(
        ErrorKind::kConfig,
        fmt::format("no pipeline of {} lands in a DuckDB file, which is what a SELECT reads", config.file.string()));
  }
  return fail(ErrorKind::kConfig, fmt::format("{} pipelines land in DuckDB files; name one with --pipeline ({})",
                                              candidates.size(), fmt::join(candidates, ", ")));
}

}  // namespace

std::vector<std::string> duckdb_pipelines(const Config& config) {
  std::vector<std::string> names;
  for (const auto& [name, pipeline] : config.pipelines) {
    if (config.sinks.at(pipeline.data_sink).type == kDuckDb) names.push_back(name);
  }
  return names;
}

bool is_destination_query(std::string_view sql) {
  const std::string word = first_word(sql);
  for (std::string_view reads : {"select", "with", "from", "describe", "summarize", "explain"}) {
    if (word == reads) return true;
  }
  return false;
}

Result<QueryResult> query_destination(std::string_view sql, const std::string& pipeline, const Config* config) {
  if (config == nullptr) {
    return fail(ErrorKind::kConfig, "a SELECT reads a pipeline's DuckDB destination, and no skippr.yml was found");
  }
  auto name = pick_pipeline(pipeline, *config);
  if (!name) return std::unexpected(name.error());
  const auto& sink = config->sinks.at(config->pipelines.at(*name).data_sink);
  const std::string path = sink.params.value("path", std::string());
  if (path != ":memory:" && !std::filesystem::exists(path)) {
    return fail(ErrorKind::kConfig,
                fmt::format("pipeline '{}' has landed nothing yet: {} does not exist; run skipprd sync --pipeline {} "
                            "first",
                            *name, path, *name));
  }
  auto db = DuckDbDatabase::open(path, {{"access_mode", "READ_ONLY"}});
  if (!db) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("cannot open {} to read it (a running sync holds it while it lands: try again): {}", path,
                            db.error().message));
  }
  auto conn = DuckDbConnection::connect(*db);
  if (!conn) return std::unexpected(conn.error());
  auto rows = conn->query(sql);
  if (!rows) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} (pipeline '{}', {}): {}", std::string(sql), *name, path, rows.error().message));
  }
  QueryResult result;
  result.columns = rows->columns;
  for (auto& row : rows->rows) {
    std::vector<std::string> cells;
    for (auto& cell : row) cells.push_back(cell.value_or("NULL"));
    result.rows.push_back(std::move(cells));
  }
  return result;
}

}  // namespace skippr
