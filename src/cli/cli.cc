#include "cli/cli.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <optional>

#include "cli/commands.h"
#include "core/result.h"

namespace skippr::cli {
namespace {

void setup_logging(const std::optional<std::string>& level) {
  auto logger = spdlog::stderr_color_mt("skipprd");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
  // Without --log only warnings and errors are shown; the progress line or the events carry the rest.
  spdlog::set_level(level ? spdlog::level::from_str(*level) : spdlog::level::warn);
}

}  // namespace

int run(int argc, char** argv) {
  // A write to a connection the other side has closed (a replica, a server) must be an error to handle, not a
  // signal that kills the process: TLS writes go through write(2), where MSG_NOSIGNAL cannot be passed.
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"skipprd: moves records from sources to destinations through a local write-ahead log, exactly once",
               "skipprd"};
  app.set_version_flag("--version", std::string("skipprd ") + SKIPPR_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  std::string config_file;
  std::string log_level;
  std::string output;

  SyncArgs sync_args;
  auto* sync = app.add_subcommand("sync", "Run one pipeline: read, commit to the WAL, land in the sink");
  sync->add_option("--pipeline", sync_args.pipeline, "The pipeline to run (a key under pipelines: in skippr.yml)")
      ->required();
  sync->add_flag("--once", sync_args.once, "Read until the source has nothing more, land everything, exit");
  auto* log_option = sync->add_option("--log", log_level,
                                      "Human logs on stderr at LEVEL (trace, debug, info, warn, "
                                      "error); info when LEVEL is omitted")
                         ->expected(0, 1)
                         ->check(CLI::IsMember({"", "trace", "debug", "info", "warn", "error"}));
  sync->add_option("--output", output, "progress (default on a terminal), json (JSON-lines events) or text")
      ->check(CLI::IsMember({"progress", "json", "text"}));
  sync->add_option("--config", config_file,
                   "The configuration file (default: SKIPPR_CONFIG_FILE, else skippr.yml "
                   "here or in the nearest parent folder)");

  std::string sql;
  std::string query_pipeline;
  auto* query = app.add_subcommand("query",
                                   "Run a control statement (RESET PIPELINE, SHOW PIPELINES, SHOW PIPELINE, "
                                   "SHOW STATS FOR, ENABLE PIPELINE, DISABLE PIPELINE), or a SELECT on a "
                                   "pipeline's DuckDB destination");
  query->add_option("--sql", sql, "The statement, e.g. \"SHOW PIPELINE bikehire\" or \"SELECT count(*) FROM trips\"")
      ->required();
  query->add_option("--pipeline", query_pipeline,
                    "With a SELECT: the pipeline whose DuckDB file to read (needed when several land in DuckDB)");
  query->add_option("--config", config_file, "The configuration file");
  query->add_option("--output", output, "text (default) or json")->check(CLI::IsMember({"text", "json"}));

  auto* validate = app.add_subcommand("validate", "Check the configuration; every error with file:line");
  validate->add_option("--config", config_file, "The configuration file");

  bool connectors_markdown = false;
  auto* connectors =
      app.add_subcommand("connectors", "List the sources and sinks of this build, each sink with its retry guarantee");
  connectors->add_flag("--markdown", connectors_markdown,
                       "Each connector's parameter table in Markdown, between the markers of docs/connectors/");

  std::string wal_pipeline;
  auto* wal = app.add_subcommand("wal", "Look at a pipeline's write-ahead log");
  wal->require_subcommand(1);
  auto* inspect = wal->add_subcommand("inspect", "Segments, batches, committed/landed state and checksums");
  inspect->add_option("--pipeline", wal_pipeline, "The pipeline")->required();
  inspect->add_option("--output", output, "text (default) or json")->check(CLI::IsMember({"text", "json"}));

  std::string listen;
  bool insecure = false;
  auto* replica =
      app.add_subcommand("replica", "Keep synchronous WAL copies for primaries running with WAL_STORAGE=clustered");
  replica->add_option("--listen", listen, "HOST:PORT to listen on (default: SKIPPR_CLUSTER_LISTEN)");
  replica->add_flag("--insecure", insecure,
                    "Plaintext without authentication (a test on one machine); TLS needs SKIPPR_CLUSTER_TLS_*");

  std::string serve_listen = "127.0.0.1:8484";
  auto* serve = app.add_subcommand(
      "serve", "Run every pipeline of skippr.yml in this process, with a status page (and /metrics) on --listen");
  serve->add_option("--listen", serve_listen, "HOST:PORT of the status page (default 127.0.0.1:8484)");
  serve->add_option("--config", config_file, "The configuration file");

  std::string promote_pipeline;
  auto* promote = app.add_subcommand(
      "promote", "Fail over: make this machine's replica copy of a pipeline its WAL, fencing the old primary");
  promote->add_option("--pipeline", promote_pipeline, "The pipeline")->required();

  auto* help = app.add_subcommand("help", "Show help for skipprd or one of its commands");
  std::string help_topic;
  help->add_option("command", help_topic, "The command");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    // An unknown or missing command: say which there are.
    if (app.get_subcommands().empty()) {
      fmt::print(
          stderr,
          "the commands are: sync, serve, query, validate, connectors, wal inspect, replica, promote, help (skipprd "
          "help COMMAND "
          "for one)\n");
    }
    return exit_code::kUsage;  // usage errors are exit 2 whatever CLI11 would choose
  }

  if (help->parsed()) {
    if (help_topic.empty()) {
      // The program's own help: App::help() would show the selected subcommand's, which is `help` itself.
      fmt::print("{}", app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal));
      return 0;
    }
    try {
      fmt::print("{}", app.get_subcommand(help_topic)->help());
      return 0;
    } catch (const CLI::OptionNotFound&) {
      fmt::print(stderr, "error: there is no command '{}'; run skipprd help\n", help_topic);
      return exit_code::kUsage;
    }
  }

  const bool log_given = log_option->count() > 0;
  setup_logging(log_given ? std::optional<std::string>(log_level.empty() ? "info" : log_level) : std::nullopt);
  std::optional<std::filesystem::path> config;
  if (!config_file.empty()) config = config_file;

  if (sync->parsed()) {
    sync_args.config = config;
    sync_args.output = output;
    return run_sync_command(sync_args);
  }
  if (query->parsed()) return run_query_command(sql, config, output, query_pipeline);
  if (serve->parsed()) return run_serve_command(serve_listen, config);
  if (validate->parsed()) return run_validate_command(config);
  if (connectors->parsed()) return run_connectors_command(connectors_markdown);
  if (inspect->parsed()) return run_wal_inspect_command(wal_pipeline, output);
  if (replica->parsed()) return run_replica_command(listen, insecure);
  if (promote->parsed()) return run_promote_command(promote_pipeline);
  return exit_code::kUsage;
}

}  // namespace skippr::cli
