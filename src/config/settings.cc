// settings_from_env: PRODUCT.md's environment table. An empty variable counts as unset (compose files often
// write `VAR=`). Every malformed variable is reported, one per line.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/config.h"
#include "config/parse_text.h"
#include "config/suggest.h"
#include "core/failpoint.h"

namespace skippr {

namespace {

using namespace config_detail;

class EnvReader {
 public:
  std::optional<std::string> get(const char* name) const {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  }

  void bytes(const char* name, uint64_t& out) {
    read(name, out, "a positive byte count such as 10485760, 10MiB or 512KiB", [](std::string_view t) {
      auto v = parse_byte_size(t);
      return v && *v > 0 ? v : std::nullopt;
    });
  }

  // Seconds; `allow_zero` for durations where 0 means "do not wait".
  void seconds(const char* name, double& out, bool allow_zero = false) {
    read(name, out,
         allow_zero ? "a number of seconds >= 0, such as 60 or 0.5" : "a number of seconds > 0, such as 60 or 0.5",
         [allow_zero](std::string_view t) {
           auto v = parse_double(t);
           return v && (*v > 0 || (allow_zero && *v == 0)) ? v : std::nullopt;
         });
  }

  void problem(std::string message) { problems_.push_back(std::move(message)); }

  Status status() const {
    if (problems_.empty()) return ok();
    return fail(ErrorKind::kConfig, join(problems_, "\n"));
  }

  template <class T, class Parse>
  void read(const char* name, T& out, std::string_view expected, Parse parse) {
    auto text = get(name);
    if (!text) return;
    if (auto value = parse(*text)) {
      out = *value;
    } else {
      problem(fmt::format("{}='{}' is not valid; it must be {}", name, *text, expected));
    }
  }

 private:
  std::vector<std::string> problems_;
};

}  // namespace

Result<Settings> settings_from_env() { return settings_from_env(std::filesystem::current_path()); }

Result<Settings> settings_from_env(const std::filesystem::path& relative_to) {
  Settings s;
  EnvReader env;

  // Relative to skippr.yml's folder like every relative path in it, so a sync started from a subfolder (or by a
  // scheduler with another working directory) finds the same state instead of starting a new one.
  const std::filesystem::path data_dir = env.get("DATA_DIR").value_or("data");
  s.data_dir =
      (data_dir.is_absolute() ? data_dir : std::filesystem::absolute(relative_to) / data_dir).lexically_normal();

  if (auto storage = env.get("WAL_STORAGE")) {
    if (*storage != "disk" && *storage != "s3" && *storage != "clustered") {
      env.problem(fmt::format("WAL_STORAGE='{}' is not valid; it must be disk, s3 or clustered", *storage));
    } else {
      s.wal_storage = *storage;
    }
  }
  if (auto store = env.get("SKIPPR_STATE_STORE")) {
    if (*store != "local" && *store != "dynamodb") {
      env.problem(fmt::format("SKIPPR_STATE_STORE='{}' is not valid; it must be local or dynamodb", *store));
    } else {
      s.state_store = *store;
    }
  }
  s.wal_s3_bucket = env.get("SKIPPR_WAL_S3_BUCKET").value_or("");
  s.wal_s3_prefix = env.get("SKIPPR_WAL_S3_PREFIX").value_or("");
  while (s.wal_s3_prefix.starts_with('/')) s.wal_s3_prefix.erase(0, 1);
  if (!s.wal_s3_prefix.empty() && !s.wal_s3_prefix.ends_with('/')) s.wal_s3_prefix += '/';
  s.state_dynamodb_table = env.get("SKIPPR_STATE_DYNAMODB_TABLE").value_or("");
  env.seconds("SKIPPR_LEASE_SECONDS", s.lease_seconds);
  if (s.wal_storage == "s3" && s.wal_s3_bucket.empty()) {
    env.problem("WAL_STORAGE=s3 needs SKIPPR_WAL_S3_BUCKET, the bucket that keeps the WAL's batches");
  }
  if (s.state_store == "dynamodb" && s.state_dynamodb_table.empty()) {
    env.problem(
        "SKIPPR_STATE_STORE=dynamodb needs SKIPPR_STATE_DYNAMODB_TABLE, the table that keeps the pipelines' "
        "state (created on first use when absent)");
  }
  // Each needs the other: a WAL that outlives the machine is useless with state that does not (the batch ids and
  // the record of what is committed are in the state), and state that outlives it would point at a lost WAL.
  if (s.wal_storage != "clustered" && (s.wal_storage == "s3") != (s.state_store == "dynamodb")) {
    env.problem(
        fmt::format("WAL_STORAGE={} with SKIPPR_STATE_STORE={} does not work: use WAL_STORAGE=s3 with "
                    "SKIPPR_STATE_STORE=dynamodb (machines that can be lost), or neither (DATA_DIR)",
                    s.wal_storage, s.state_store));
  }

  s.metrics_address = env.get("SKIPPR_METRICS_ADDRESS").value_or("");
  s.cluster_peer = env.get("SKIPPR_PEERS").value_or("");
  s.cluster_listen = env.get("SKIPPR_CLUSTER_LISTEN").value_or("");
  s.cluster_tls_cert = env.get("SKIPPR_CLUSTER_TLS_CERT").value_or("");
  s.cluster_tls_key = env.get("SKIPPR_CLUSTER_TLS_KEY").value_or("");
  s.cluster_tls_ca = env.get("SKIPPR_CLUSTER_TLS_CA").value_or("");
  env.read("SKIPPR_CLUSTER_INSECURE", s.cluster_insecure, "yes or no (also true/false, on/off, 1/0)", parse_bool);
  env.seconds("SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS", s.cluster_ack_timeout_seconds);
  if (s.wal_storage == "clustered") {
    if (s.cluster_peer.empty()) {
      env.problem("WAL_STORAGE=clustered needs SKIPPR_PEERS, the host:port of the peer running skipprd replica");
    } else if (s.cluster_peer.find(',') != std::string::npos) {
      env.problem(
          fmt::format("SKIPPR_PEERS='{}' names several peers; this build keeps one synchronous copy, on "
                      "one peer: name exactly one host:port",
                      s.cluster_peer));
    }
  }

  env.bytes("BUFFER_THRESHOLD_BYTES", s.buffer_threshold_bytes);
  env.seconds("BUFFER_THRESHOLD_SECONDS", s.buffer_threshold_seconds);
  env.bytes("WAL_BYTES_PER_FILE", s.wal_bytes_per_file);
  env.seconds("SYNC_FREQUENCY", s.sync_frequency_seconds);
  env.seconds("SINK_RETRY_SECONDS", s.sink_retry_seconds, /*allow_zero=*/true);
  env.bytes("LANDING_QUEUE_BYTES", s.landing_queue_bytes);
  env.read("LANDING_GROUP_BATCHES", s.landing_group_batches, "a whole number from 1 to 100000, such as 256",
           [](std::string_view t) {
             auto v = parse_uint64(t);
             return v && *v >= 1 && *v <= 100000 ? v : std::nullopt;
           });

  env.read("SKIPPR_CHAOS_MODE", s.chaos_mode, "yes or no (also true/false, on/off, 1/0)", parse_bool);
  env.seconds("SKIPPR_CHAOS_MIN_SECONDS", s.chaos_min_seconds);
  env.seconds("SKIPPR_CHAOS_MAX_SECONDS", s.chaos_max_seconds);
  if (s.chaos_min_seconds > s.chaos_max_seconds) {
    env.problem(
        fmt::format("SKIPPR_CHAOS_MIN_SECONDS ({}) is above SKIPPR_CHAOS_MAX_SECONDS ({}); make the minimum "
                    "at most the maximum",
                    s.chaos_min_seconds, s.chaos_max_seconds));
  }
  env.read("SKIPPR_CHAOS_SEED", s.chaos_seed, "an unsigned 64-bit integer such as 42", parse_uint64);
  if (auto point = env.get("SKIPPR_CHAOS_FAILPOINT")) {
    if (!failpoint::known_point(*point)) {
      std::vector<std::string> names(std::begin(failpoint::kAll), std::end(failpoint::kAll));
      names.insert(names.end(), std::begin(failpoint::kSinkSpecific), std::end(failpoint::kSinkSpecific));
      env.problem(
          fmt::format("SKIPPR_CHAOS_FAILPOINT='{}' is not a failpoint; use one of: {}", *point, join(names, ", ")));
    }
    s.chaos_failpoint = *point;
  }
  env.read("SKIPPR_CHAOS_FAILPOINT_PASS", s.chaos_failpoint_pass, "a whole number from 1 to 1000000, such as 3",
           [](std::string_view t) -> std::optional<int> {
             auto v = parse_uint64(t);
             if (!v || *v < 1 || *v > 1000000) return std::nullopt;
             return static_cast<int>(*v);
           });

  SKIPPR_TRY(env.status());
  return s;
}

}  // namespace skippr
