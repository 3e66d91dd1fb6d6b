#include "sources/kafka/kafka_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <librdkafka/rdkafka.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <utility>

#include "formats/json_columns.h"

namespace skippr {
namespace {

constexpr int kFirstPollMs = 100;  // how long a poll waits for the first message
// How often the partitions of the subscribed topics are listed again, so a new partition (or a new topic that
// matches the pattern) is read without a restart.
constexpr auto kPartitionRefresh = std::chrono::seconds(30);

using PartitionKey = std::pair<std::string, int32_t>;
using Offsets = std::map<PartitionKey, int64_t>;  // next offset to read, per topic/partition

std::string offsets_to_json(const Offsets& offsets) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [tp, offset] : offsets) j[tp.first][std::to_string(tp.second)] = offset;
  return j.dump();
}

Result<Offsets> offsets_from_json(const std::string& text) {
  Offsets offsets;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return fail(ErrorKind::kCorruption, fmt::format("Kafka source: unreadable position '{}'", text));
  for (const auto& [topic, partitions] : j.items()) {
    if (!partitions.is_object())
      return fail(ErrorKind::kCorruption, fmt::format("Kafka source: bad position '{}'", text));
    for (const auto& [partition, offset] : partitions.items()) {
      if (!offset.is_number_integer()) {
        return fail(ErrorKind::kCorruption, fmt::format("Kafka source: bad position '{}'", text));
      }
      offsets[{topic, std::stoi(partition)}] = offset.get<int64_t>();
    }
  }
  return offsets;
}

struct Options {
  std::vector<std::string> topics;  // a name starting with ^ is a regex pattern (librdkafka's convention)
  bool json = true;
  bool stream_per_topic = false;  // each topic a stream of its own, landed in its own table
  bool start_latest = false;
  double connect_timeout_seconds = 30;
  std::map<std::string, std::string> properties;  // librdkafka configuration
};

bool matches_subscription(const std::vector<std::string>& subscription, const std::string& topic) {
  for (const auto& s : subscription) {
    if (s.front() != '^' ? s == topic : std::regex_search(topic, std::regex(s))) return true;
  }
  return false;
}

// librdkafka retries a broker that is away and logs each attempt; its lines go through our log, at most a few a
// minute, so a broker down for an hour does not bury everything else.
class LibrdkafkaLog {
 public:
  explicit LibrdkafkaLog(std::string source) : source_(std::move(source)) {}
  void write(int level, const char* facility, const char* text) {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - window_start_ > std::chrono::minutes(1)) {
      if (suppressed_ > 0)
        spdlog::warn("Kafka source '{}': {} more librdkafka message(s) not shown", source_, suppressed_);
      window_start_ = now;
      shown_ = 0;
      suppressed_ = 0;
    }
    if (level >= 7 || ++shown_ > kPerMinute) {
      suppressed_ += level < 7;
      return;
    }
    const auto spd = level <= 4 ? spdlog::level::warn : spdlog::level::info;
    spdlog::log(spd, "Kafka source '{}': librdkafka {}: {}", source_, facility, text);
  }

 private:
  static constexpr int kPerMinute = 5;
  std::string source_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
  int shown_ = 0;
  uint64_t suppressed_ = 0;
};

class KafkaSource final : public Source {
 public:
  KafkaSource(std::string name, Options options) : name_(std::move(name)), options_(std::move(options)), log_(name_) {}

  ~KafkaSource() override {
    if (held_) rd_kafka_message_destroy(held_);
    if (!consumer_) return;
    rd_kafka_consumer_close(consumer_);
    rd_kafka_destroy(consumer_);
  }

  bool streaming() const override { return true; }
  bool names_streams() const override { return options_.stream_per_topic; }

  Status open() override {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    for (const auto& [key, value] : options_.properties) {
      if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return fail(ErrorKind::kConfig, fmt::format("Kafka source '{}': {}", name_, err));
      }
    }
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_log_cb(conf, [](const rd_kafka_t* rk, int level, const char* facility, const char* text) {
      static_cast<KafkaSource*>(rd_kafka_opaque(rk))->log_.write(level, facility, text);
    });
    consumer_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!consumer_) return fail(ErrorKind::kConfig, fmt::format("Kafka source '{}': {}", name_, err));
    rd_kafka_poll_set_consumer(consumer_);
    return ok();
  }

  // Its positions name data that can be read again from there, whoever committed them.
  bool resumes_from_destination() const override { return true; }

  // The partitions are assigned here, not by joining the consumer group: the WAL holds the offsets and one process
  // per pipeline is enforced by its lease, so there is nothing for a group to coordinate, and waiting for one to
  // form (or, after a SIGKILL, for the dead member's session to time out) cost seconds to minutes at every start.
  // The group still receives the committed offsets (acknowledge), for lag monitoring.
  Status seek(const Position& position) override {
    next_.clear();
    if (!position.empty()) {
      auto offsets = offsets_from_json(position.token);
      if (!offsets) return std::unexpected(offsets.error());
      next_ = std::move(*offsets);
    }
    rd_kafka_assign(consumer_, nullptr);
    assigned_.clear();
    at_end_.clear();
    end_at_start_.clear();
    start_at_start_.clear();
    return assign_new_partitions(/*at_start=*/true);
  }

  Result<Poll> poll(const Budget& budget) override {
    if (std::chrono::steady_clock::now() - listed_at_ >= kPartitionRefresh) {
      SKIPPR_TRY(assign_new_partitions(/*at_start=*/false));
    }
    // The poll's rows: one (message columns, value fields) pair, or one per topic when each topic is a stream, so a
    // topic's table gets its own fields only.
    std::map<std::string, std::pair<Batch, Batch>> rows;
    size_t bytes = 0, taken_rows = 0;
    for (int timeout = kFirstPollMs; taken_rows < budget.max_rows && bytes < budget.max_bytes; timeout = 0) {
      rd_kafka_message_t* m = held_ ? std::exchange(held_, nullptr) : rd_kafka_consumer_poll(consumer_, timeout);
      if (!m) break;
      const std::string stream = options_.stream_per_topic && m->rkt ? rd_kafka_topic_name(m->rkt) : "";
      auto [at, added] = rows.try_emplace(stream);
      if (added) at->second.first = meta_batch();
      auto& [meta, values] = at->second;
      const size_t before = meta.rows;
      auto taken = take(m, meta, values, bytes);
      if (taken && !*taken) {
        held_ = m;  // starts the next poll, so the engine cuts the batch before it
        break;
      }
      rd_kafka_message_destroy(m);
      if (!taken) return std::unexpected(taken.error());
      taken_rows += meta.rows - before;
    }
    Poll result;
    for (auto& [stream, pair] : rows) {
      auto& [meta, values] = pair;
      SKIPPR_TRY(merge(meta, values));
      if (meta.rows == 0) continue;
      meta.stream = stream;
      if (result.records.rows == 0) {
        result.records = std::move(meta);
      } else {
        result.other_streams.push_back(std::move(meta));
      }
    }
    result.position_after = Position{offsets_to_json(next_)};
    result.keep_position = std::exchange(pinned_, false);
    // Every partition is past the end it had when reading started: an --once run ends here even while producers
    // keep writing (it would otherwise chase them); a streaming run just cuts the batch and polls on.
    result.drained = caught_up();
    result.backlog = consumer_lag();
    return result;
  }

  Status acknowledge(const Position& position) override {
    auto offsets = offsets_from_json(position.token);
    if (!offsets) return std::unexpected(offsets.error());
    if (offsets->empty()) return ok();
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(offsets->size());
    for (const auto& [tp, offset] : *offsets) {
      rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second)->offset = offset;
    }
    // Asynchronous: the WAL is the truth; the group's offsets only have to catch up eventually.
    const rd_kafka_resp_err_t e = rd_kafka_commit(consumer_, list, 1);
    rd_kafka_topic_partition_list_destroy(list);
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      return fail(ErrorKind::kUnavailable, fmt::format("Kafka commit: {}", rd_kafka_err2str(e)));
    }
    return ok();
  }

 private:
  // The consumer lag past position_after: for each assigned partition, its high watermark minus the next offset to
  // read. The watermark is the one the last fetch carried (librdkafka caches it: no broker round trip), or the end
  // queried at assignment before any fetch. Messages retention deleted before they were read do not count.
  uint64_t consumer_lag() const {
    uint64_t waiting = 0;
    for (const auto& tp : assigned_) {
      int64_t low = RD_KAFKA_OFFSET_INVALID, high = RD_KAFKA_OFFSET_INVALID;
      rd_kafka_get_watermark_offsets(consumer_, tp.first.c_str(), tp.second, &low, &high);
      if (auto at = end_at_start_.find(tp); at != end_at_start_.end()) high = std::max(high, at->second);
      if (auto at = start_at_start_.find(tp); at != start_at_start_.end()) low = std::max(low, at->second);
      if (high < 0) continue;
      const auto next = next_.find(tp);
      const int64_t from = std::max<int64_t>(next != next_.end() ? next->second : 0, std::max<int64_t>(low, 0));
      if (high > from) waiting += static_cast<uint64_t>(high - from);
    }
    return waiting;
  }

  // Drained (an --once run then ends): every partition is read up to the end it had when reading started (or to
  // its current end, whichever comes first), or no topic matches the subscription.
  bool caught_up() const {
    for (const auto& tp : assigned_) {
      if (at_end_.contains(tp)) continue;
      auto end = end_at_start_.find(tp);
      auto next = next_.find(tp);
      if (end != end_at_start_.end() && next != next_.end() && next->second >= end->second) continue;
      return false;
    }
    return true;
  }

  // The partitions of the subscribed topics, as the brokers list them now; `unreadable` gets each topic named in
  // `topics` that is absent or listed with an error. At start, no answer is exit 75; on a refresh it is nullopt.
  Result<std::optional<std::vector<PartitionKey>>> list_partitions(bool at_start,
                                                                   std::vector<std::string>& unreadable) {
    const rd_kafka_metadata_t* md = nullptr;
    const int timeout_ms = at_start ? static_cast<int>(options_.connect_timeout_seconds * 1000) : 5000;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(consumer_, 1, nullptr, &md, timeout_ms);
    if (e && !at_start) {
      spdlog::warn("Kafka source '{}': listing partitions failed ({}); retried in {} s", name_, rd_kafka_err2str(e),
                   kPartitionRefresh.count());
      return std::optional<std::vector<PartitionKey>>();
    }
    if (e) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("Kafka source '{}': no broker of '{}' answered within {} s ({}); nothing was read. Check "
                              "`brokers` and the network, then run again",
                              name_, options_.properties.at("bootstrap.servers"), options_.connect_timeout_seconds,
                              rd_kafka_err2str(e)));
    }
    std::vector<PartitionKey> found;
    std::set<std::string> listed;  // every subscribed topic the brokers name, in error or not
    for (int i = 0; i < md->topic_cnt; ++i) {
      const auto& topic = md->topics[i];
      if (!matches_subscription(options_.topics, topic.topic)) continue;
      listed.insert(topic.topic);
      if (topic.err) {
        unreadable.push_back(fmt::format("{} ({})", topic.topic, rd_kafka_err2str(topic.err)));
        continue;
      }
      for (int k = 0; k < topic.partition_cnt; ++k) found.push_back({topic.topic, topic.partitions[k].id});
    }
    rd_kafka_metadata_destroy(md);
    for (const auto& named : options_.topics) {
      if (named.front() != '^' && !listed.contains(named)) {
        unreadable.push_back(fmt::format("{} (not on the brokers)", named));
      }
    }
    return std::optional<std::vector<PartitionKey>>(std::move(found));
  }

  // Lists the partitions of the subscribed topics and assigns those not assigned yet, each from the WAL's offset
  // (or where a partition never read starts). At start a broker must answer within connect_timeout_seconds (else
  // exit 75 with one sentence, not an endless wait), and a subscription that matches no topic is said once (an
  // --once run then ends at once); later, a failed listing is only retried at the next refresh.
  Status assign_new_partitions(bool at_start) {
    listed_at_ = std::chrono::steady_clock::now();
    std::vector<std::string> unreadable;  // topics named in `topics` that the brokers do not list, or list in error
    auto listed = list_partitions(at_start, unreadable);
    // Right after a topic is created its metadata can say LEADER_NOT_AVAILABLE: at start, a named topic is asked for
    // again until connect_timeout_seconds, so an --once run does not end without reading it.
    const auto deadline = listed_at_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(options_.connect_timeout_seconds));
    while (at_start && listed && *listed && !unreadable.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::vector<std::string> still_unreadable;
      auto again = list_partitions(/*at_start=*/false, still_unreadable);
      if (again && *again) {  // a listing that failed keeps the last one
        listed = std::move(again);
        unreadable = std::move(still_unreadable);
      }
    }
    if (!listed) return std::unexpected(listed.error());
    if (!*listed) return ok();  // a refresh that failed: retried at the next one
    const std::vector<PartitionKey>& found = **listed;
    if (at_start && !unreadable.empty()) {
      spdlog::warn("Kafka source '{}': {} cannot be read yet; listed again every {} s", name_,
                   fmt::join(unreadable, ", "), kPartitionRefresh.count());
    }
    forget_partitions_not_in(found);
    if (found.empty() && at_start) {
      spdlog::warn("Kafka source '{}': no topic on the brokers matches {}; nothing to read until one exists", name_,
                   fmt::join(options_.topics, ", "));
    }
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(found.size()));
    for (const auto& tp : found) {
      if (assigned_.contains(tp)) continue;
      // Where an --once run ends: the partition's end now. A partition that cannot say is read to its end (EOF).
      int64_t low = 0, high = 0;
      if (!rd_kafka_query_watermark_offsets(consumer_, tp.first.c_str(), tp.second, &low, &high, 10000)) {
        end_at_start_[tp] = high;
        start_at_start_[tp] = low;
        if (high <= low) at_end_.insert(tp);  // empty: nothing to wait for
      }
      auto it = next_.find(tp);
      rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second)->offset =
          it != next_.end() ? it->second : start_offset(tp, at_start);
      assigned_.insert(tp);
    }
    const int added = list->cnt;
    rd_kafka_error_t* error = added > 0 ? rd_kafka_incremental_assign(consumer_, list) : nullptr;
    rd_kafka_topic_partition_list_destroy(list);
    if (error) {
      const std::string why = rd_kafka_error_string(error);
      rd_kafka_error_destroy(error);
      return fail(ErrorKind::kUnavailable, fmt::format("Kafka source '{}': assigning partitions: {}", name_, why));
    }
    if (added > 0) spdlog::info("Kafka source '{}': reading {} partition(s)", name_, added);
    return ok();
  }

  // Stops reading partitions a listing no longer shows (a deleted topic, a pattern that no longer matches), so an
  // --once run does not wait for them. Their offsets stay in the position: a partition that comes back resumes there.
  void forget_partitions_not_in(const std::vector<PartitionKey>& listed) {
    rd_kafka_topic_partition_list_t* gone = rd_kafka_topic_partition_list_new(1);
    for (auto it = assigned_.begin(); it != assigned_.end();) {
      if (std::ranges::find(listed, *it) != listed.end()) {
        ++it;
        continue;
      }
      rd_kafka_topic_partition_list_add(gone, it->first.c_str(), it->second);
      at_end_.erase(*it);
      end_at_start_.erase(*it);
      start_at_start_.erase(*it);
      it = assigned_.erase(it);
    }
    if (gone->cnt > 0) {
      spdlog::warn("Kafka source '{}': {} partition(s) are no longer listed by the brokers; not read any more", name_,
                   gone->cnt);
      if (rd_kafka_error_t* error = rd_kafka_incremental_unassign(consumer_, gone)) rd_kafka_error_destroy(error);
    }
    rd_kafka_topic_partition_list_destroy(gone);
  }

  // Where a partition this pipeline never read starts: the WAL owns the offsets, so the group's committed offsets
  // are not used (a RESET really starts over). `latest` is pinned to the partition's end when it was assigned
  // (end_at_start_) and kept as the position even when nothing is read, so messages produced before the next run are
  // not skipped. `latest` applies to the partitions there when the pipeline starts; one created later (found by a
  // refresh) is read from its beginning, as everything in it was produced after the pipeline started.
  int64_t start_offset(const PartitionKey& tp, bool at_start) {
    if (!options_.start_latest || !at_start) return RD_KAFKA_OFFSET_BEGINNING;
    const auto end = end_at_start_.find(tp);
    if (end == end_at_start_.end()) {
      spdlog::warn("Kafka source '{}': the end of {}[{}] is unknown; it starts at the end seen when reading starts",
                   name_, tp.first, tp.second);
      return RD_KAFKA_OFFSET_END;
    }
    next_[tp] = end->second;
    pinned_ = true;
    return end->second;
  }

  static Batch meta_batch() {
    Batch b;
    b.add_column({"topic", Type::kString});
    b.add_column({"partition", Type::kInt64});
    b.add_column({"offset", Type::kInt64});
    b.add_column({"timestamp", Type::kTimestamp});
    b.add_column({"key", Type::kBinary});
    b.add_column({"headers", Type::kJson});
    b.add_column({"value", Type::kBinary});  // raw format, or a JSON value that is not an object
    return b;
  }

  // Adds a message to the poll's rows; false (nothing changed) when its JSON fields do not fit the rows taken so
  // far (a field of another type, or one differing only in letter case): it then starts the next poll.
  Result<bool> take(rd_kafka_message_t* m, Batch& meta, Batch& values, size_t& bytes) {
    const std::string topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      at_end_.insert({topic, m->partition});
      return true;
    }
    if (m->err) {
      const bool fatal = m->err == RD_KAFKA_RESP_ERR__FATAL || m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
                         m->err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED;
      if (fatal)
        return fail(ErrorKind::kConfig, fmt::format("Kafka source '{}': {}", name_, rd_kafka_message_errstr(m)));
      spdlog::warn("Kafka source '{}': {} (librdkafka retries)", name_, rd_kafka_message_errstr(m));
      return true;
    }
    const PartitionKey tp{topic, m->partition};
    if (auto it = next_.find(tp); it != next_.end() && m->offset < it->second) return true;  // already handed over
    const std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
    bool parsed = false;
    if (options_.json && m->payload) {
      simdjson::dom::object object;
      if (!parser_.parse(value).get_object().get(object)) {
        Batch row;
        if (append_json_object(object, row)) {
          if (!values.append(row)) return false;
          parsed = true;
        }
      }
    }
    at_end_.erase(tp);
    if (auto it = next_.find(tp); it != next_.end()) {
      if (m->offset > it->second) {
        spdlog::error(
            "Kafka source '{}': {}[{}] jumps from offset {} to {}: those messages were deleted (retention) "
            "before they were read",
            name_, topic, m->partition, it->second, m->offset);
      }
    }
    next_[tp] = m->offset + 1;

    auto& c = meta.columns;
    c[0].append_string(topic);
    c[1].append_int(m->partition);
    c[2].append_int(m->offset);
    rd_kafka_timestamp_type_t ts_type;
    const int64_t ts = rd_kafka_message_timestamp(m, &ts_type);
    ts >= 0 ? c[3].append_int(ts * 1000) : c[3].append_null();
    m->key ? c[4].append_string({static_cast<const char*>(m->key), m->key_len}) : c[4].append_null();
    append_headers(m, c[5]);
    if (parsed) {
      c[6].append_null();
    } else {
      m->payload ? c[6].append_string(value) : c[6].append_null();
      grow_with_null_row(values);
    }
    meta.rows += 1;
    bytes += value.size() + topic.size() + 32;
    return true;
  }

  static void grow_with_null_row(Batch& values) {
    for (auto& column : values.columns) column.append_null();
    values.rows += 1;
  }

  static void append_headers(rd_kafka_message_t* m, Column& column) {
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(m, &headers) || !headers) return column.append_null();
    nlohmann::json j = nlohmann::json::object();
    const char* name;
    const void* val;
    size_t size;
    for (size_t i = 0; !rd_kafka_header_get_all(headers, i, &name, &val, &size); ++i) {
      j[name] = val ? std::string(static_cast<const char*>(val), size) : std::string();
    }
    column.append_string(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

  // The value's fields follow the message columns; a field named like one of them is kept as value_<name>.
  static Status merge(Batch& meta, Batch& values) {
    if (values.rows != 0 && values.rows != meta.rows) {
      return fail(ErrorKind::kInternal, "Kafka source: value rows do not match message rows");
    }
    for (size_t i = 0; i < values.columns.size(); ++i) {
      Field field = values.schema.fields[i];
      if (meta.schema.index_of(field.name) >= 0) field.name = "value_" + field.name;
      meta.schema.fields.push_back(field);
      meta.columns.push_back(std::move(values.columns[i]));
    }
    return ok();
  }

  std::string name_;
  Options options_;
  LibrdkafkaLog log_;
  rd_kafka_t* consumer_ = nullptr;
  rd_kafka_message_t* held_ = nullptr;                 // read but left for the next poll (see take)
  std::chrono::steady_clock::time_point listed_at_{};  // the partitions were last listed
  bool pinned_ = false;  // start_offset fixed a position that the next poll hands over to be kept
  simdjson::dom::parser parser_;
  Offsets next_;  // reader thread only
  std::set<PartitionKey> assigned_;
  std::set<PartitionKey> at_end_;
  Offsets end_at_start_;    // each partition's end when it was assigned: where an --once run stops
  Offsets start_at_start_;  // and its first offset then (the consumer lag of a partition never read starts there)
};

Result<Options> read_options(const ConnectorContext& ctx) {
  const auto& p = ctx.params;
  Options o;
  o.topics = p.value("topics", std::vector<std::string>{});
  // topic_pattern is the name the streams guide uses; pattern the older one. One of them.
  if (p.contains("pattern") && p.contains("topic_pattern")) {
    return fail(ErrorKind::kConfig, fmt::format("Kafka source '{}': give pattern or topic_pattern, not both (they "
                                                "are one setting)",
                                                ctx.name));
  }
  const std::string pattern = p.value(p.contains("topic_pattern") ? "topic_pattern" : "pattern", std::string());
  if (!pattern.empty()) o.topics.push_back(pattern.front() == '^' ? pattern : "^" + pattern);
  if (o.topics.empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("Kafka source '{}': give topics (a list) or pattern (a regex)", ctx.name));
  }
  const std::string format = p.value("format", std::string("json"));
  if (format != "json" && format != "raw") {
    return fail(ErrorKind::kConfig,
                fmt::format("Kafka source '{}': format '{}' must be json or raw", ctx.name, format));
  }
  o.json = format == "json";
  o.stream_per_topic = p.value("stream_per_topic", false);
  const std::string start = p.value("start", std::string("earliest"));
  if (start != "earliest" && start != "latest") {
    return fail(ErrorKind::kConfig,
                fmt::format("Kafka source '{}': start '{}' must be earliest or latest", ctx.name, start));
  }
  o.properties = p.value("properties", std::map<std::string, std::string>{});
  o.properties["bootstrap.servers"] = p.value("brokers", std::string());
  o.properties["group.id"] = p.value("group_id", std::string());
  o.start_latest = start == "latest";
  o.connect_timeout_seconds = p.value("connect_timeout_seconds", 30.0);
  if (o.connect_timeout_seconds <= 0)
    return fail(ErrorKind::kConfig,
                fmt::format("Kafka source '{}': connect_timeout_seconds must be positive", ctx.name));
  o.properties["auto.offset.reset"] = start;     // used only where an offset is out of range (deleted by retention)
  o.properties["enable.auto.commit"] = "false";  // offsets are committed in acknowledge(), after the WAL commit
  o.properties["enable.auto.offset.store"] = "false";
  o.properties["enable.partition.eof"] = "true";  // tells poll() it has caught up
  for (const auto& [param, property] : std::map<std::string, std::string>{{"security_protocol", "security.protocol"},
                                                                          {"sasl_mechanism", "sasl.mechanisms"},
                                                                          {"sasl_username", "sasl.username"},
                                                                          {"sasl_password", "sasl.password"}}) {
    if (auto v = p.value(param, std::string()); !v.empty()) o.properties[property] = v;
  }
  return o;
}

}  // namespace

ConnectorSpec kafka_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "Kafka";
  spec.backlog = BacklogUnit{
      "messages", "Kafka consumer lag: messages between the read position and the partitions' high watermarks.",
      "messages"};
  spec.is_source = true;
  spec.summary = "reads Kafka topics; offsets live in the WAL and are committed to Kafka after each WAL commit";
  spec.params = {
      {"brokers", ParamType::kString, true, nullptr, "bootstrap servers, host:port[,host:port]"},
      {"topics", ParamType::kStringList, false, nullptr, "topics to read"},
      {"pattern", ParamType::kString, false, nullptr, "or a regex of topic names, e.g. '^events\\..*'"},
      {"topic_pattern", ParamType::kString, false, nullptr, "the same as pattern, by the name the streams guide uses"},
      {"group_id", ParamType::kString, true, nullptr,
       "the consumer group the committed offsets are reported to (for lag monitoring); partitions are assigned by "
       "skipprd itself, from the WAL's offsets"},
      {"start", ParamType::kString, false, "earliest",
       "earliest|latest: where a partition this pipeline never read starts (the group's offsets are not used)"},
      {"connect_timeout_seconds", ParamType::kDouble, false, 30.0,
       "how long to wait for a broker to answer at start (then exit 75)"},
      {"stream_per_topic", ParamType::kBool, false, false,
       "each topic a stream of its own, landed in its own table by a sink whose table holds {stream}; without it "
       "every topic lands in one table, with a topic column"},
      {"format", ParamType::kString, false, "json",
       "json: a JSON object value becomes columns (nested values stay JSON); raw: the value is binary"},
      {"security_protocol", ParamType::kString, false, nullptr, "plaintext|ssl|sasl_plaintext|sasl_ssl"},
      {"sasl_mechanism", ParamType::kString, false, nullptr, "PLAIN|SCRAM-SHA-256|SCRAM-SHA-512"},
      {"sasl_username", ParamType::kString, false, nullptr, "use ${VAR} to keep it out of the file"},
      {"sasl_password", ParamType::kString, false, nullptr, "use ${VAR} to keep it out of the file"},
      {"properties", ParamType::kStringMap, false, nullptr, "more librdkafka settings (e.g. session.timeout.ms)"},
  };
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    auto options = read_options(ctx);
    if (!options) return std::unexpected(options.error());
    return std::make_unique<KafkaSource>(ctx.name, std::move(*options));
  };
  return spec;
}

}  // namespace skippr
