// skippr.yml (+ .env + environment) -> a typed, validated configuration. Every mistake is reported with file:line
// and what to do, all of them at once, before anything is read or written.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/connector.h"
#include "core/result.h"

namespace skippr {

struct SourceLocation {
  std::string file;
  int line = 0;             // 1-based
  int column = 0;           // 1-based
  std::string str() const;  // "file:line:column"
};

struct ConnectorConfig {
  std::string name;       // the key under data_sources / data_sinks
  std::string type;       // the single key under the name, e.g. "DuckDB"
  nlohmann::json params;  // validated against the spec: defaults applied, ${VAR} expanded, paths absolute
  SourceLocation where;
  const ConnectorSpec* spec = nullptr;
};

struct PipelineConfig {
  std::string name;
  std::string data_source;  // the connector's name (without the "data_sources." prefix)
  std::string data_sink;
  bool chaos_mode = false;
  Landing landing = Landing::kAppend;
  bool landing_given = false;  // false: the source's default landing (ConnectorSpec::default_landing) applies
  std::vector<std::string> primary_key;
  std::vector<std::string> partition_by;  // replace_partition's partition columns
  // replace_table: a sync that reads no rows empties the table only when this is set; otherwise it is refused
  // (exit 1) and the table stays as it is (an unmounted share must not wipe a table).
  bool allow_empty_replace = false;
  SourceLocation where;
};

struct Config {
  std::filesystem::path file;  // absolute path of skippr.yml
  std::map<std::string, ConnectorConfig> sources;
  std::map<std::string, ConnectorConfig> sinks;
  std::map<std::string, PipelineConfig> pipelines;
  // The file's text exactly as read: ${VAR} unexpanded, comments kept. The later config writer (Python API) edits
  // and saves this rather than re-emitting the expanded values, so secrets are never written back. Text rather
  // than a YAML::Node keeps yaml-cpp out of this header, and a YAML::Node would drop the comments anyway.
  std::string raw_yaml;

  // kConfig with a sentence naming the pipeline and the ones that exist, when absent.
  Result<const PipelineConfig*> pipeline(const std::string& name) const;
};

// What a connector's factory is given for `pipeline` (the pipeline's landing and key, the connector's params).
// Whether source `source`'s parameters make it key each stream itself (ConnectorSpec::keys_streams).
bool source_keys_streams(const ConnectorConfig& source);
// Whether it can read one stream again on its own (ConnectorSpec::resyncs_streams): RESYNC STREAM.
bool source_resyncs_streams(const ConnectorConfig& source);
ConnectorContext connector_context(const PipelineConfig& pipeline, const ConnectorConfig& connector,
                                   const std::filesystem::path& pipeline_dir);

// --config, else SKIPPR_CONFIG_FILE, else skippr.yml in `start_dir` or its nearest parent.
Result<std::filesystem::path> discover_config(const std::optional<std::filesystem::path>& explicit_path,
                                              const std::filesystem::path& start_dir);

// Loads .env beside the file (without overriding variables already set), then parses and validates.
Result<Config> load_config(const std::filesystem::path& file);

// load_config on `text` as if it were the content of `file` (its .env, relative paths and error positions): lets the
// config writer validate what it is about to save before it replaces the file.
Result<Config> parse_config(const std::filesystem::path& file, std::string text);

// Process-wide settings from the environment (PRODUCT.md's table). A malformed number is a kConfig error.
struct Settings {
  std::filesystem::path data_dir;     // absolute
  std::string wal_storage = "disk";   // or "s3"
  std::string wal_s3_bucket;          // SKIPPR_WAL_S3_BUCKET
  std::string wal_s3_prefix;          // SKIPPR_WAL_S3_PREFIX: "" or ending in '/'
  std::string state_store = "local";  // or "dynamodb"
  std::string state_dynamodb_table;   // SKIPPR_STATE_DYNAMODB_TABLE
  double lease_seconds = 30;          // SKIPPR_LEASE_SECONDS
  std::string metrics_address;        // SKIPPR_METRICS_ADDRESS: host:port of /metrics; empty: not served
  // WAL_STORAGE=clustered: the peer that keeps the synchronous copy (SKIPPR_PEERS), the replica's own address
  // (SKIPPR_CLUSTER_LISTEN, for `skipprd replica`), TLS files, and how long a commit waits for the peer.
  std::string cluster_peer;
  std::string cluster_listen;
  std::string cluster_tls_cert;
  std::string cluster_tls_key;
  std::string cluster_tls_ca;
  bool cluster_insecure = false;  // SKIPPR_CLUSTER_INSECURE=yes: plaintext, for tests on one machine
  double cluster_ack_timeout_seconds = 30;
  uint64_t buffer_threshold_bytes = 10ull << 20;
  double buffer_threshold_seconds = 60;
  uint64_t wal_bytes_per_file = 64ull << 20;
  double sync_frequency_seconds = 900;
  double sink_retry_seconds = 60;
  // Coalesced landing: at most this many committed batches (and BUFFER_THRESHOLD_BYTES) in one destination
  // transaction, for sinks that can land a group atomically. 1 lands each batch in its own transaction.
  uint64_t landing_group_batches = 256;
  // Committed bytes that may wait in memory for the lander (and the most one group takes); unset: twice
  // BUFFER_THRESHOLD_BYTES.
  uint64_t landing_queue_bytes = 0;
  uint64_t landing_queue_limit() const {
    return landing_queue_bytes ? landing_queue_bytes : 2 * buffer_threshold_bytes;
  }
  std::optional<bool> chaos_mode;  // SKIPPR_CHAOS_MODE, when set
  double chaos_min_seconds = 5;
  double chaos_max_seconds = 30;
  std::optional<uint64_t> chaos_seed;
  std::string chaos_failpoint;  // SKIPPR_CHAOS_FAILPOINT: one of failpoint::kAll, or "" for the seed's choice
  int chaos_failpoint_pass = 1;
};
// Letters, digits, '_', '.' and '-', and not "." or "..": a pipeline's name is a folder under DATA_DIR/pipelines, so
// nothing else may reach the file system (a name like ../../x would write or delete outside DATA_DIR).
bool is_valid_pipeline_name(std::string_view name);

// A relative DATA_DIR (default "data") is taken relative to `relative_to`: the folder of skippr.yml when there is one.
Result<Settings> settings_from_env(const std::filesystem::path& relative_to);
// The same relative to the working folder, for commands that run without a skippr.yml.
Result<Settings> settings_from_env();

}  // namespace skippr
