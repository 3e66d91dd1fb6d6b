// One function per command; each returns the process exit code and prints its own errors (one sentence on stderr).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace skippr::cli {

struct SyncArgs {
  std::string pipeline;
  bool once = false;
  std::string output;  // empty = progress on a terminal, text otherwise
  std::optional<std::filesystem::path> config;
};

int run_sync_command(const SyncArgs& args);
int run_query_command(const std::string& sql, const std::optional<std::filesystem::path>& config_path,
                      const std::string& output, const std::string& pipeline);
int run_validate_command(const std::optional<std::filesystem::path>& config);
// `skipprd connectors [--markdown]`: the table of this build's connectors, or each one's parameters as Markdown.
int run_connectors_command(bool markdown);
int run_wal_inspect_command(const std::string& pipeline, const std::string& output);
// `skipprd replica --listen ADDR [--insecure]`: keeps synchronous WAL copies for clustered primaries until stopped.
int run_replica_command(const std::string& listen, bool insecure);
// `skipprd serve --listen ADDR`: every pipeline of skippr.yml in this process, and the status page, until stopped.
int run_serve_command(const std::string& listen, const std::optional<std::filesystem::path>& config);
// `skipprd promote --pipeline NAME`: the replica's copy here becomes the pipeline's WAL (a failover).
int run_promote_command(const std::string& pipeline);

}  // namespace skippr::cli
