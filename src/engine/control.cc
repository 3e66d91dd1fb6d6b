#include "engine/control.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "engine/pipeline_storage.h"
#include "state/state_store.h"
#include "wal/wal.h"

namespace skippr {
namespace {

std::vector<std::string> tokenize(std::string_view sql) {
  std::string text(sql);
  while (!text.empty() && (std::isspace(static_cast<unsigned char>(text.back())) || text.back() == ';')) {
    text.pop_back();
  }
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool starts_with_words(const std::vector<std::string>& words, std::initializer_list<const char*> keywords) {
  if (words.size() < keywords.size()) return false;
  size_t i = 0;
  for (const char* k : keywords) {
    if (upper(words[i++]) != k) return false;
  }
  return true;
}

std::string unquote(std::string name) {
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'' || name.front() == '`') &&
      name.back() == name.front()) {
    return name.substr(1, name.size() - 2);
  }
  return name;
}

// The full id of batch `seq`: as the WAL recorded it when the batch is still there, else of the state's lineage.
std::string batch_label(const PipelineState& state, const WalInspection& wal, uint64_t seq,
                        const std::string& pipeline) {
  if (seq == 0) return "none";
  for (const auto& batch : wal.batches) {
    if (batch.seq == seq) return batch.id.str();
  }
  return BatchId{pipeline, state.epoch, seq, state.lineage}.str();
}

// The pipeline's storage, once it is known: named in skippr.yml, or holding state.
Result<std::unique_ptr<PipelineStorage>> known_storage(const std::string& pipeline, const Config* config,
                                                       const Settings& settings) {
  auto storage = PipelineStorage::open(settings, pipeline);
  if (!storage) return std::unexpected(storage.error());
  if (config && config->pipelines.count(pipeline)) return storage;
  auto known = (*storage)->state().known();
  if (!known) return std::unexpected(known.error());
  if (*known) return storage;
  if (config) return std::unexpected(config->pipeline(pipeline).error());
  return fail(ErrorKind::kConfig, fmt::format("pipeline '{}' is unknown: it is in no skippr.yml and has no state in {}",
                                              pipeline, (*storage)->state().where()));
}

Result<QueryResult> show_pipeline(const std::string& name, const Config* config, const Settings& settings) {
  auto storage = known_storage(name, config, settings);
  if (!storage) return std::unexpected(storage.error());
  StateStore& store = (*storage)->state();
  auto state = store.load();
  if (!state) return std::unexpected(state.error());
  QueryResult r;
  r.columns = {"property", "value"};
  auto add = [&](std::string k, std::string v) { r.rows.push_back({std::move(k), std::move(v)}); };
  add("pipeline", name);
  if (config && config->pipelines.count(name)) {
    const auto& p = config->pipelines.at(name);
    add("source", fmt::format("{} ({})", p.data_source, config->sources.at(p.data_source).type));
    add("sink", fmt::format("{} ({})", p.data_sink, config->sinks.at(p.data_sink).type));
    add("landing", to_string(p.landing));
  }
  add("enabled", state->enabled ? "yes" : "no");
  add("running", store.holder().value_or("no"));
  add("epoch", std::to_string(state->epoch));
  add("lineage", state->lineage.empty() ? "(none yet)" : state->lineage);
  auto wal = (*storage)->inspect_wal(*state);
  if (!wal) return std::unexpected(wal.error());
  const Position& position = wal->last_committed_seq > 0 ? wal->last_position : state->resume_position;
  add("source_position", position.empty() ? "start" : position.token);
  if (!state->resumed_after.empty()) add("resumed_after", state->resumed_after + " (from the destination's ledger)");
  add("last_committed_batch", batch_label(*state, *wal, wal->last_committed_seq, name));
  add("last_landed_batch", batch_label(*state, *wal, std::min(wal->landed_watermark, wal->last_committed_seq), name));
  add("batches_waiting",
      std::to_string(wal->last_committed_seq > wal->landed_watermark ? wal->last_committed_seq - wal->landed_watermark
                                                                     : 0));
  add("wal_bytes", std::to_string(wal->bytes));
  add("wal_segments", std::to_string(wal->segments.size()));
  add("wal", (*storage)->wal_location());
  add("state", store.where());
  add("data_dir", (*storage)->paths().root.string());
  return r;
}

Result<QueryResult> show_stats(const std::string& name, const Config* config, const Settings& settings) {
  auto storage = known_storage(name, config, settings);
  if (!storage) return std::unexpected(storage.error());
  const PipelineStats s = (*storage)->state().load_stats();
  QueryResult r;
  r.columns = {"stat", "value"};
  auto add = [&](std::string k, auto v) { r.rows.push_back({std::move(k), fmt::format("{}", v)}); };
  add("runs", s.runs);
  for (const auto& [name, member] : DeliveryCounts::fields()) add(name, s.*member);
  add("last_run_started", s.last_run_started.empty() ? "never" : s.last_run_started);
  add("last_run_finished", s.last_run_finished.empty() ? "never" : s.last_run_finished);
  add("last_exit_code", s.last_exit_code);
  add("last_rows_per_second", fmt::format("{:.0f}", s.last_rows_per_second));
  // A pipeline of several streams: each stream's rows landed, and its rejects and dead letters where it has some.
  for (const auto& [name, member] : DeliveryCounts::stream_fields()) {
    for (const auto& [stream, count] : s.*member) add(fmt::format("{}[{}]", name, stream), count);
  }
  return r;
}

Result<QueryResult> show_pipelines(const Config* config, const Settings& settings) {
  std::set<std::string> names;
  if (config) {
    for (const auto& [name, _] : config->pipelines) names.insert(name);
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(settings.data_dir / "pipelines", ec)) {
    if (entry.is_directory()) names.insert(entry.path().filename().string());
  }
  QueryResult r;
  r.columns = {"pipeline", "source", "sink", "enabled", "epoch", "running", "batches_waiting"};
  for (const auto& name : names) {
    auto storage = PipelineStorage::open(settings, name);
    if (!storage) return std::unexpected(storage.error());
    StateStore& store = (*storage)->state();
    auto state = store.load();
    std::string source = "-", sink = "-";
    if (config && config->pipelines.count(name)) {
      source = config->pipelines.at(name).data_source;
      sink = config->pipelines.at(name).data_sink;
    }
    std::string waiting = "?";
    if (state) {
      auto wal = (*storage)->inspect_wal(*state);
      waiting = wal ? std::to_string(wal->last_committed_seq > wal->landed_watermark
                                         ? wal->last_committed_seq - wal->landed_watermark
                                         : 0)
                    : "unreadable";
    }
    r.rows.push_back({name, source, sink, state && state->enabled ? "yes" : (state ? "no" : "?"),
                      state ? std::to_string(state->epoch) : "?", store.holder() ? "yes" : "no", waiting});
  }
  return r;
}

// See engine/reset.h for why the epoch is bumped before the WAL is deleted.
Result<QueryResult> reset_pipeline(const std::string& name, const Config* config, const Settings& settings) {
  auto storage = known_storage(name, config, settings);
  if (!storage) return std::unexpected(storage.error());
  auto lease = (*storage)->state().acquire();
  if (!lease) return std::unexpected(lease.error());
  auto epoch = (*storage)->reset();
  if (!epoch) return std::unexpected(epoch.error());
  QueryResult r;
  r.message = fmt::format(
      "pipeline '{}' reset: WAL and source position deleted, now epoch {}. The next sync reads the "
      "source from the start; append-only destinations get the rows again unless you clear them",
      name, *epoch);
  return r;
}

// A run in another process (sync, or serve) would neither see a change of the pipeline's state nor keep it: its
// own state saves rewrite it. kLocked saying to do it there (`there`; under serve: `under_serve`), or once it stopped.
Status check_not_running_elsewhere(PipelineStorage& storage, const std::string& name, const std::string& there,
                                   const std::string& under_serve) {
  if (auto holder = storage.state().holder()) {
    return fail(ErrorKind::kLocked,
                fmt::format("pipeline '{}' is running in another process ({}); {} (under serve: {}) "
                            "or stop that process first",
                            name, *holder, there, under_serve));
  }
  return ok();
}

Result<QueryResult> set_enabled(const std::string& name, bool enabled, const Config* config, const Settings& settings) {
  auto storage = known_storage(name, config, settings);
  if (!storage) return std::unexpected(storage.error());
  const char* action = enabled ? "enable" : "disable";
  SKIPPR_TRY(check_not_running_elsewhere(**storage, name, fmt::format("{} it there", action),
                                         fmt::format("the page's button or POST /api/pipelines/{}/{}", name, action)));
  SKIPPR_TRY((*storage)->state().set_enabled(enabled));
  QueryResult r;
  r.message = fmt::format("pipeline '{}' {}", name, enabled ? "enabled" : "disabled");
  return r;
}

// RESYNC STREAM: one stream read again from the source (a snapshot of that table while the others go on), without
// resetting the pipeline. Recorded in the pipeline's state as one more request for the stream; the next run's source
// answers it and commits that it did with its position.
Result<QueryResult> resync_stream(const std::string& name, const std::string& stream, const Config* config,
                                  const Settings& settings) {
  if (!is_valid_pipeline_name(name) || stream.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("'{}' names no pipeline and stream: write RESYNC TABLE "
                                                "<pipeline>.<stream>",
                                                name + "." + stream));
  }
  if (config) {
    auto pipeline = config->pipeline(name);
    if (!pipeline) return std::unexpected(pipeline.error());
    const ConnectorConfig& source = config->sources.at((*pipeline)->data_source);
    if (!source_resyncs_streams(source)) {
      return fail(ErrorKind::kConfig,
                  fmt::format("pipeline '{}' cannot re-sync one stream ('{}'): its source '{}' ({}) does not read "
                              "streams it can snapshot one at a time (a Postgres CDC source of several tables can); "
                              "RESET PIPELINE {} reads everything again",
                              name, stream, (*pipeline)->data_source, source.type, name));
    }
  }
  auto storage = known_storage(name, config, settings);
  if (!storage) return std::unexpected(storage.error());
  SKIPPR_TRY(check_not_running_elsewhere(**storage, name, "re-sync it there",
                                         fmt::format("POST /api/pipelines/{}/resync/{}", name, stream)));
  // A name no stream of the pipeline ever had (a typo) would be a request nobody answers: refused, naming the streams
  // the pipeline has landed. Before anything landed there is nothing to check it against (and nothing to re-read).
  const auto landed = (*storage)->state().load_stats().stream_rows_landed;
  if (!landed.empty() && !landed.contains(stream)) {
    std::vector<std::string> names;
    for (const auto& [known, rows] : landed) names.push_back(known);
    constexpr size_t kNamed = 12;
    const size_t more = names.size() > kNamed ? names.size() - kNamed : 0;
    names.resize(std::min(names.size(), kNamed));
    return fail(ErrorKind::kConfig,
                fmt::format("pipeline '{}' has landed no rows of a stream '{}'; its streams: {}{} (SHOW STATS FOR {} "
                            "lists them)",
                            name, stream, fmt::join(names, ", "), more ? fmt::format(" and {} more", more) : "", name));
  }
  auto lease = (*storage)->state().acquire();
  if (!lease) return std::unexpected(lease.error());
  auto state = (*storage)->state().load();
  if (!state) return std::unexpected(state.error());
  const uint64_t request = ++state->resync_requests[stream];
  SKIPPR_TRY((*storage)->state().save(*state));
  QueryResult r;
  r.message = fmt::format(
      "stream '{}' of pipeline '{}' will be read again from a snapshot of its own (request {}), while the other "
      "streams go on; merge_by_key destinations end equal to the source, append destinations get its rows again",
      stream, name, request);
  return r;
}

// RESYNC TABLE's "<pipeline>.<stream>": the longest pipeline of the configuration it starts with, else up to the
// first dot.
std::pair<std::string, std::string> resync_target(const std::string& both, const Config* config) {
  size_t cut = 0;
  if (config) {
    for (const auto& [name, pipeline] : config->pipelines) {
      if (name.size() > cut && both.size() > name.size() + 1 && both.starts_with(name + ".")) cut = name.size();
    }
  }
  if (cut == 0) cut = both.find('.');
  return {both.substr(0, cut), both.substr(cut + 1)};
}

}  // namespace

Result<Statement> parse_statement(std::string_view sql) {
  const auto words = tokenize(sql);
  auto named = [&](StatementKind kind, size_t keywords) -> Result<Statement> {
    if (words.size() != keywords + 1) {
      return fail(ErrorKind::kConfig, fmt::format("'{}' needs exactly one pipeline name after it",
                                                  fmt::join(words.begin(), words.begin() + keywords, " ")));
    }
    std::string name = unquote(words[keywords]);
    if (!is_valid_pipeline_name(name)) {
      return fail(ErrorKind::kConfig, fmt::format("'{}' is not a pipeline name: names hold only letters, digits, "
                                                  "'_', '.' and '-'",
                                                  name));
    }
    return Statement{kind, std::move(name), ""};
  };
  if (starts_with_words(words, {"RESET", "PIPELINE"})) return named(StatementKind::kResetPipeline, 2);
  if (starts_with_words(words, {"RESYNC", "TABLE"})) {
    // RESYNC TABLE <pipeline>.<stream>: which dot ends the pipeline's name is settled against the configuration
    // (resync_target), since both names may hold dots.
    if (words.size() != 3 || unquote(words[2]).find('.') == std::string::npos) {
      return fail(ErrorKind::kConfig,
                  "write RESYNC TABLE <pipeline>.<stream> (or RESYNC STREAM <stream> IN PIPELINE "
                  "<name>)");
    }
    return Statement{StatementKind::kResyncStream, "", unquote(words[2])};
  }
  if (starts_with_words(words, {"RESYNC", "STREAM"})) {
    // RESYNC STREAM <stream> IN PIPELINE <name>
    if (words.size() != 6 || upper(words[3]) != "IN" || upper(words[4]) != "PIPELINE") {
      return fail(ErrorKind::kConfig, "write RESYNC STREAM <stream> IN PIPELINE <name>");
    }
    auto statement = named(StatementKind::kResyncStream, 5);
    if (!statement) return statement;
    statement->stream = unquote(words[2]);
    return statement;
  }
  if (starts_with_words(words, {"ENABLE", "PIPELINE"})) return named(StatementKind::kEnablePipeline, 2);
  if (starts_with_words(words, {"DISABLE", "PIPELINE"})) return named(StatementKind::kDisablePipeline, 2);
  if (starts_with_words(words, {"SHOW", "STATS", "FOR"})) return named(StatementKind::kShowStats, 3);
  if (starts_with_words(words, {"SHOW", "PIPELINES"}) && words.size() == 2) {
    return Statement{StatementKind::kShowPipelines, "", ""};
  }
  if (starts_with_words(words, {"SHOW", "PIPELINE"})) return named(StatementKind::kShowPipeline, 2);
  return fail(
      ErrorKind::kConfig,
      fmt::format(
          "cannot run '{}': expected one of RESET PIPELINE <name>, SHOW PIPELINES, SHOW PIPELINE "
          "<name>, SHOW STATS FOR <name>, ENABLE PIPELINE <name>, DISABLE PIPELINE <name>, RESYNC STREAM <stream> IN "
          "PIPELINE <name>, or a SELECT "
          "reading a pipeline's DuckDB destination",
          sql));
}

Result<QueryResult> execute_statement(const Statement& s, const Config* config, const Settings& settings) {
  switch (s.kind) {
    case StatementKind::kResetPipeline:
      return reset_pipeline(s.pipeline, config, settings);
    case StatementKind::kShowPipelines:
      return show_pipelines(config, settings);
    case StatementKind::kShowPipeline:
      return show_pipeline(s.pipeline, config, settings);
    case StatementKind::kShowStats:
      return show_stats(s.pipeline, config, settings);
    case StatementKind::kEnablePipeline:
      return set_enabled(s.pipeline, true, config, settings);
    case StatementKind::kDisablePipeline:
      return set_enabled(s.pipeline, false, config, settings);
    case StatementKind::kResyncStream: {
      if (!s.pipeline.empty()) return resync_stream(s.pipeline, s.stream, config, settings);
      const auto [pipeline, stream] = resync_target(s.stream, config);
      return resync_stream(pipeline, stream, config, settings);
    }
  }
  return fail(ErrorKind::kInternal, "unknown statement");
}

}  // namespace skippr
