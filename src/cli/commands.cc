#include "cli/commands.h"

#include <fmt/format.h>
#include <signal.h>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "cli/table.h"
#include "config/config.h"
#include "config/parse_text.h"
#include "core/connector.h"
#include "core/host_port.h"
#include "engine/command_setup.h"
#include "engine/control.h"
#include "engine/destination_query.h"
#include "engine/pipeline_storage.h"
#include "engine/sync.h"
#include "serve/metrics_endpoint.h"
#include "serve/serve_endpoint.h"
#include "serve/supervisor.h"
#include "state/pipeline_state.h"
#include "wal/clustered/replica_server.h"
#include "wal/wal.h"

namespace skippr::cli {
namespace {

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};

// First SIGINT/SIGTERM: stop reading and land what is committed. A second one: leave at once (the WAL keeps it all).
void on_stop_signal(int signo) {
  if (g_stop_requested.exchange(true)) _exit(exit_code::kRetryLater);
  g_stop_signal = signo;
}

// serve does not reload skippr.yml (see docs/operations/serve.md): a SIGHUP is answered in the log instead of
// ending it.
std::atomic<bool> g_hangup{false};
void on_hangup(int) { g_hangup = true; }

void install_hangup_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_hangup;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGHUP, &sa, nullptr);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int report(const Error& e) {
  fmt::print(stderr, "error: {}\n", e.message);
  return exit_code_for(e.kind);
}

}  // namespace

namespace {

// After a run into a DuckDB file, the command that shows its rows (Debian has no DuckDB CLI to look with).
void print_how_to_look(const Config& config, const std::string& pipeline) {
  const auto landing_in_duckdb = duckdb_pipelines(config);
  if (std::ranges::find(landing_in_duckdb, pipeline) == landing_in_duckdb.end()) return;
  const auto& sink = config.sinks.at(config.pipelines.at(pipeline).data_sink);
  const std::string flag = landing_in_duckdb.size() > 1 ? " --pipeline " + pipeline : "";
  const std::string table = sink.params.value("table", std::string());
  if (table.empty() || table.find("{stream}") != std::string::npos) {
    // Each stream has a table of its own: list them.
    fmt::print(stderr,
               "look at the tables: skipprd query{} --sql \"SELECT table_name FROM information_schema.tables\"\n",
               flag);
    return;
  }
  fmt::print(stderr, "look at the rows: skipprd query{} --sql \"SELECT * FROM {} LIMIT 10\"\n", flag, table);
}

}  // namespace

int run_sync_command(const SyncArgs& args) {
  auto setup = prepare_sync(args.config, args.pipeline);
  if (!setup) return report(setup.error());

  OutputMode mode = isatty(STDERR_FILENO) ? OutputMode::kProgress : OutputMode::kText;
  if (args.output == "json") mode = OutputMode::kJson;
  if (args.output == "text") mode = OutputMode::kText;
  if (args.output == "progress") mode = OutputMode::kProgress;
  // Events go to stdout unless the sink itself writes there.
  auto reporter = make_reporter(mode, sink_writes_stdout(setup->config, args.pipeline) ? stderr : stdout);

  // Served before anything is read, so a scrape sees the whole run; a bad address stops here (exit 2).
  std::unique_ptr<MetricsEndpoint> metrics;
  if (!setup->settings.metrics_address.empty()) {
    auto started = MetricsEndpoint::start(setup->settings.metrics_address);
    if (!started) return report(started.error());
    metrics = std::move(*started);
  }

  install_stop_handlers();
  SyncOptions options;
  options.pipeline = args.pipeline;
  options.once = args.once;
  options.stop_requested = &g_stop_requested;
  SyncResult result = run_sync(setup->config, setup->settings, options, *reporter);
  if (result.interrupted) {
    fmt::print(stderr, "stopped: {}\n", result.message);
    return 128 + (g_stop_signal.load() != 0 ? g_stop_signal.load() : SIGINT);  // 130 for SIGINT, 143 for SIGTERM
  }
  if (result.exit_code != 0) fmt::print(stderr, "error: {}\n", result.message);
  if (result.exit_code == 0 && mode != OutputMode::kJson) print_how_to_look(setup->config, args.pipeline);
  return result.exit_code;
}

int run_query_command(const std::string& sql, const std::optional<std::filesystem::path>& config_path,
                      const std::string& output, const std::string& pipeline) {
  auto result = run_statement(sql, config_path, pipeline);
  if (!result) return report(result.error());
  if (!result->message.empty()) fmt::print("{}\n", result->message);
  if (!result->columns.empty()) {
    fmt::print("{}", output == "json" ? format_json_rows(result->columns, result->rows)
                                      : format_table(result->columns, result->rows));
  }
  return 0;
}

int run_validate_command(const std::optional<std::filesystem::path>& config_path) {
  auto config = discover_and_load_config(config_path);
  if (!config) return report(config.error());
  auto settings = settings_from_env(config->file.parent_path());
  if (!settings) return report(settings.error());
  fmt::print("{} is valid: {} source{}, {} sink{}, {} pipeline{}\n", config->file.string(), config->sources.size(),
             config->sources.size() == 1 ? "" : "s", config->sinks.size(), config->sinks.size() == 1 ? "" : "s",
             config->pipelines.size(), config->pipelines.size() == 1 ? "" : "s");
  return 0;
}

namespace {

// One cell of a Markdown table: a '|' would end the cell, a newline the row; outside a code span, a '*' would start
// emphasis (in/**/*.csv) and a '<' an HTML tag (https://<account>.blob...).
std::string markdown_cell(const std::string& text, bool code_span = false) {
  std::string out;
  for (char c : text) {
    if (c == '|' || (c == '*' && !code_span)) {
      out += '\\';
      out += c;
    } else if (c == '<' && !code_span) {
      out += "&lt;";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string markdown_default(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) {
    const auto text = value.get<std::string>();
    return text.empty() ? "`\"\"`" : "`" + markdown_cell(text, true) + "`";
  }
  return "`" + markdown_cell(value.dump(), true) + "`";
}

// `skipprd connectors --markdown`: per connector, its parameter table between the markers the pages of
// docs/connectors/ hold (scripts/gen-connector-docs.py writes them there; tests/e2e/connector_docs_test.cc compares).
void print_connector_params_markdown() {
  for (const auto& spec : connector_registry()) {
    fmt::print("<!-- params:begin {} {} -->\n", spec.type_name, spec.is_source ? "source" : "sink");
    if (spec.params.empty()) {
      fmt::print("This {} takes no parameters.\n", spec.is_source ? "source" : "sink");
    } else {
      fmt::print("| parameter | type | required | default | what it is |\n|---|---|---|---|---|\n");
      for (const auto& p : spec.params) {
        fmt::print("| `{}` | {} | {} | {} | {} |\n", p.name, to_string(p.type), p.required ? "yes" : "no",
                   markdown_default(p.default_value), markdown_cell(p.doc));
      }
    }
    fmt::print("<!-- params:end -->\n\n");
  }
}

}  // namespace

int run_connectors_command(bool markdown) {
  if (markdown) {
    print_connector_params_markdown();
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& spec : connector_registry()) {
    std::vector<std::string> params;
    for (const auto& p : spec.params) params.push_back(p.required ? p.name + "*" : p.name);
    rows.push_back({spec.is_source ? "source" : "sink", spec.type_name,
                    spec.is_source ? "-" : to_string(spec.guarantee), spec.summary,
                    params.empty() ? "-" : fmt::format("{}", fmt::join(params, ", "))});
  }
  fmt::print("{}", format_table({"kind", "type", "guarantee on retry", "what", "parameters (* required)"}, rows));
  return 0;
}

int run_wal_inspect_command(const std::string& pipeline, const std::string& output) {
  if (!is_valid_pipeline_name(pipeline)) {
    return report(Error{ErrorKind::kConfig, fmt::format("'{}' is not a pipeline name: names hold only letters, "
                                                        "digits, '_', '.' and '-'",
                                                        pipeline)});
  }
  auto config = discover_config_if_any(std::nullopt);
  if (!config) return report(config.error());
  auto settings = settings_for(*config);
  if (!settings) return report(settings.error());
  auto storage = PipelineStorage::open(*settings, pipeline);
  if (!storage) return report(storage.error());
  // The disk WAL is read without the state (a damaged state.json must not hide it); S3's needs it to find the keys.
  auto state = (*storage)->state().load();
  if (!state && (*storage)->wal_in_object_store()) return report(state.error());
  auto wal = (*storage)->inspect_wal(state ? *state : PipelineState{});
  if (!wal) return report(wal.error());
  const std::string where = (*storage)->wal_location();
  if (wal->segments.empty() && wal->last_committed_seq == 0) {
    fmt::print("pipeline '{}' has no WAL in {} (never run, or reset)\n", pipeline, where);
    return 0;
  }
  std::vector<std::vector<std::string>> segments, batches;
  for (const auto& s : wal->segments) {
    segments.push_back({s.name, std::to_string(s.first_seq), std::to_string(s.batches), std::to_string(s.bytes)});
  }
  for (const auto& b : wal->batches) {
    batches.push_back({b.id.str(), std::to_string(b.rows), std::filesystem::path(b.segment).filename().string(),
                       std::to_string(b.offset), std::to_string(b.record_bytes), fmt::format("{:08x}", b.crc),
                       b.landed ? "landed" : "committed", b.position_after.token});
  }
  if (output == "json") {
    fmt::print("{}", format_json_rows({"segment", "first_seq", "batches", "bytes"}, segments));
    fmt::print("{}",
               format_json_rows({"batch_id", "rows", "segment", "offset", "bytes", "crc32c", "state", "position_after"},
                                batches));
    return 0;
  }
  fmt::print("WAL of pipeline '{}' in {}: epoch {}, lineage {}, {} bytes, landed up to seq {}{}\n\n", pipeline, where,
             wal->epoch, wal->lineage.empty() ? "(none)" : wal->lineage, wal->bytes, wal->landed_watermark,
             wal->torn_tail ? " (torn tail: the next sync truncates it)" : "");
  fmt::print("{}\n", format_table({"segment", "first_seq", "batches", "bytes"}, segments));
  fmt::print("{}", format_table({"batch_id", "rows", "segment", "offset", "bytes", "crc32c", "state", "position_after"},
                                batches));
  return 0;
}

}  // namespace skippr::cli

namespace skippr::cli {

namespace {

// DATA_DIR as a sync here would take it (relative to the folder of skippr.yml when there is one), without loading
// skippr.yml: a replica's machine need not have the variables its connectors name.
std::filesystem::path data_dir_without_loading_the_config() {
  const char* env = std::getenv("DATA_DIR");
  const std::filesystem::path dir = env != nullptr && *env != '\0' ? env : "data";
  if (dir.is_absolute()) return dir.lexically_normal();
  auto file = discover_config(std::nullopt, std::filesystem::current_path());
  const std::filesystem::path base = file ? file->parent_path() : std::filesystem::current_path();
  return (std::filesystem::absolute(base) / dir).lexically_normal();
}

}  // namespace

namespace {

// serve answers /metrics on --listen itself. SKIPPR_METRICS_ADDRESS naming the same address is taken as that (no
// second listener); one that shares only the port (":8484" beside 127.0.0.1:8484) would collide with serve's own
// socket, which the listener would blame on "another process": a configuration error instead, saying what to do.
Result<bool> metrics_beside_serve(const std::string& metrics_address, const std::string& listen) {
  if (metrics_address.empty()) return false;
  auto metrics = parse_host_port(metrics_address.starts_with(':') ? "0.0.0.0" + metrics_address : metrics_address,
                                 "SKIPPR_METRICS_ADDRESS");
  auto serve = parse_host_port(listen, "--listen");
  if (!metrics || !serve || metrics->port != serve->port) return true;  // malformed ones are reported by their owner
  auto any = [](const std::string& host) { return host == "0.0.0.0" || host == "::"; };
  if (metrics->host == serve->host) {
    spdlog::info("SKIPPR_METRICS_ADDRESS is --listen: /metrics is answered there by serve");
    return false;
  }
  if (!any(metrics->host) && !any(serve->host)) return true;
  return fail(ErrorKind::kConfig,
              fmt::format("SKIPPR_METRICS_ADDRESS={} and --listen {} share port {}: serve already answers /metrics at "
                          "http://{}/metrics; unset SKIPPR_METRICS_ADDRESS, or give it another port",
                          metrics_address, listen, serve->port, listen));
}

}  // namespace

int run_serve_command(const std::string& listen, const std::optional<std::filesystem::path>& config_path) {
  auto setup = prepare_serve(config_path);
  if (!setup) return report(setup.error());
  const char* token = std::getenv("SKIPPR_SERVE_TOKEN");
  double sample_seconds = 10;
  if (const char* v = std::getenv("SKIPPR_SERVE_SAMPLE_SECONDS"); v != nullptr && *v != '\0') {
    auto parsed = config_detail::parse_double(v);
    if (!parsed || *parsed <= 0) {
      return report(
          Error{ErrorKind::kConfig,
                fmt::format("SKIPPR_SERVE_SAMPLE_SECONDS='{}' is not valid; it must be a number of seconds", v)});
    }
    sample_seconds = *parsed;
  }
  // Declared before the endpoints, so it outlives them: a scrape or a page in flight reads it until they stop.
  Supervisor supervisor(setup->config, setup->settings,
                        std::chrono::milliseconds(static_cast<int64_t>(sample_seconds * 1000)));
  auto separate_metrics = metrics_beside_serve(setup->settings.metrics_address, listen);
  if (!separate_metrics) return report(separate_metrics.error());
  std::unique_ptr<MetricsEndpoint> metrics;
  if (*separate_metrics) {
    auto started = MetricsEndpoint::start(setup->settings.metrics_address);
    if (!started) return report(started.error());
    metrics = std::move(*started);
  }
  auto endpoint = ServeEndpoint::start(listen, supervisor, token != nullptr ? token : "");
  if (!endpoint) return report(endpoint.error());
  install_stop_handlers();
  install_hangup_handler();
  supervisor.start();
  fmt::print(stderr, "serving {} pipeline{} on http://{}/ (actions {})\n", setup->config.pipelines.size(),
             setup->config.pipelines.size() == 1 ? "" : "s", listen,
             token != nullptr && *token != '\0' ? "need the SKIPPR_SERVE_TOKEN bearer token" : "off");
  while (!g_stop_requested.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_hangup.exchange(false)) {
      spdlog::warn(
          "SIGHUP: serve does not reload {}; every pipeline goes on as it started. To apply changes, "
          "restart serve (systemctl restart skipprd): each run lands what it committed first",
          setup->config.file.string());
    }
  }
  // Every run lands what it committed before the page goes away.
  supervisor.stop();
  return 0;
}

int run_replica_command(const std::string& listen_flag, bool insecure_flag) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  const std::string listen = !listen_flag.empty() ? listen_flag : env("SKIPPR_CLUSTER_LISTEN");
  if (listen.empty()) {
    return report(Error{ErrorKind::kConfig,
                        "skipprd replica needs the address to listen on: --listen HOST:PORT or SKIPPR_CLUSTER_LISTEN"});
  }
  auto address = cluster::parse_peer_address(listen, listen_flag.empty() ? "SKIPPR_CLUSTER_LISTEN" : "--listen");
  if (!address) return report(address.error());
  bool insecure = insecure_flag;
  if (const std::string v = env("SKIPPR_CLUSTER_INSECURE"); !v.empty()) {
    auto parsed = config_detail::parse_bool(v);
    if (!parsed) {
      return report(Error{ErrorKind::kConfig, fmt::format("SKIPPR_CLUSTER_INSECURE='{}' is not valid; it must be yes "
                                                          "or no",
                                                          v)});
    }
    insecure = insecure || *parsed;
  }
  const std::filesystem::path data_dir = data_dir_without_loading_the_config();
  ReplicaOptions options{data_dir, *address,
                         cluster::TlsFiles{env("SKIPPR_CLUSTER_TLS_CERT"), env("SKIPPR_CLUSTER_TLS_KEY"),
                                           env("SKIPPR_CLUSTER_TLS_CA"), insecure}};
  if (const std::string v = env("SKIPPR_CLUSTER_IDLE_TIMEOUT_SECONDS"); !v.empty()) {
    auto seconds = config_detail::parse_double(v);
    if (!seconds || *seconds <= 0) {
      return report(Error{ErrorKind::kConfig,
                          fmt::format("SKIPPR_CLUSTER_IDLE_TIMEOUT_SECONDS='{}' is not valid; it must be a number of "
                                      "seconds above 0 (default 60)",
                                      v)});
    }
    options.idle_timeout_seconds = *seconds;
  }
  install_stop_handlers();
  auto server = ReplicaServer::start(options);
  if (!server) return report(server.error());
  if (insecure) {
    fmt::print(stderr,
               "warning: --insecure: WAL copies are received in plaintext from any primary that connects; use "
               "SKIPPR_CLUSTER_TLS_CERT, _KEY and _CA anywhere but a test on one machine\n");
  }
  fmt::print("skipprd replica: listening on {}:{} ({}), keeping WAL copies in {}\n", address->host, (*server)->port(),
             insecure ? "plaintext" : "TLS, mutual authentication", (data_dir / "pipelines").string());
  std::fflush(stdout);
  while (!g_stop_requested) ::usleep(100 * 1000);
  server->reset();
  return 0;
}

int run_promote_command(const std::string& pipeline) {
  if (!is_valid_pipeline_name(pipeline)) {
    return report(Error{ErrorKind::kConfig, fmt::format("'{}' is not a pipeline name", pipeline)});
  }
  if (const char* store = std::getenv("SKIPPR_STATE_STORE"); store && std::string_view(store) == "dynamodb") {
    // A term chosen here would not be a lease token, and the next primary's token could fall below it.
    return report(Error{ErrorKind::kConfig,
                        fmt::format("with SKIPPR_STATE_STORE=dynamodb a failover needs no promote: run `skipprd sync "
                                    "--pipeline {}` on this machine, which stands by until the primary's lease runs "
                                    "out and then promotes the copy here by itself",
                                    pipeline)});
  }
  auto promoted = promote_copy(data_dir_without_loading_the_config(), pipeline);
  if (!promoted) return report(promoted.error());
  fmt::print(
      "pipeline '{}' is promoted on this machine at term {}: its copy holds batches up to seq {} (landed up to {}), "
      "lineage {}. Run it here with skipprd sync --pipeline {} (WAL_STORAGE=clustered, SKIPPR_PEERS = the other "
      "machine's skipprd replica); a primary of an older term is refused from now on.\n",
      pipeline, promoted->term, promoted->last_seq, promoted->landed_seq, promoted->lineage, pipeline);
  return 0;
}

}  // namespace skippr::cli
