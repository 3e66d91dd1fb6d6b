#include "state/dynamodb_state_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "clients/aws/dynamodb_client.h"
#include "core/time_util.h"
#include "wal/wal_commit_log.h"

namespace skippr {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

uint64_t wall_ms() { return static_cast<uint64_t>(now_micros() / 1000); }

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// This process as no other can be, on any machine: the kernel's boot id, the pid namespace and the pid. A lease
// whose holder has this boot id and namespace but a pid that is gone belongs to a process that died here (a
// SIGKILL, a crash): its successor on this machine need not wait for the lease to run out.
std::string process_identity(pid_t pid) {
  std::error_code ec;
  const auto pid_namespace = std::filesystem::read_symlink("/proc/self/ns/pid", ec).string();
  return fmt::format("{}/{}/{}", first_line("/proc/sys/kernel/random/boot_id"), pid_namespace, pid);
}

bool holder_died_on_this_machine(const std::string& identity) {
  const size_t slash = identity.rfind('/');
  if (slash == std::string::npos) return false;
  const std::string prefix = identity.substr(0, slash + 1);
  pid_t pid = 0;
  const std::string digits = identity.substr(slash + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) return false;
  if (prefix + "0" != process_identity(0)) return false;         // another machine, or another pid namespace
  if (prefix.find("/pid:[") == std::string::npos) return false;  // no namespace known: cannot tell machines apart
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

bool is_transient(const Error& e) { return e.kind == ErrorKind::kUnavailable || e.kind == ErrorKind::kUnknownOutcome; }

std::string writers_to_json(const std::vector<WalWriterRange>& writers) {
  json j = json::array();
  for (const WalWriterRange& w : writers) j.push_back({w.first_seq, w.token});
  return j.dump();
}

std::vector<WalWriterRange> writers_from_json(const std::string& text) {
  std::vector<WalWriterRange> out;
  auto j = json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& w : j) {
    if (w.is_array() && w.size() == 2) out.push_back({w[0].get<uint64_t>(), w[1].get<uint64_t>()});
  }
  return out;
}

class DynamoDbStateStore;

// The lease of one running process: renewed on a thread every third of its length; lost when a renewal finds
// another token (taken over) or when it could not be renewed before it ran out.
class DynamoDbLease final : public PipelineLease {
 public:
  DynamoDbLease(DynamoDbStateStore& store, uint64_t token, Clock::time_point valid_until);
  ~DynamoDbLease() override;
  uint64_t token() const override { return token_; }
  Status check() override;
  void on_lost(std::function<void(const Error&)> callback) override {
    std::lock_guard lock(mu_);
    on_lost_ = std::move(callback);
  }

 private:
  Status renew_locked();
  void lose_locked(Error error);
  void renew_loop();

  DynamoDbStateStore& store_;
  const uint64_t token_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  Clock::time_point valid_until_;
  std::optional<Error> lost_;
  std::function<void(const Error&)> on_lost_;
  std::thread renewer_;
};

class DynamoDbStateStore final : public StateStore, public WalCommitLog {
 public:
  DynamoDbStateStore(DynamoDbStateOptions options, DynamoDbClient db) : o_(std::move(options)), db_(std::move(db)) {}

  const DynamoDbStateOptions& options() const { return o_; }
  json key() const { return {{"pipeline", dynamo_string(o_.pipeline)}}; }

  std::string where() const override { return fmt::format("DynamoDB table {}", o_.table); }

  Result<bool> known() override {
    auto item = read_item();
    if (!item) return std::unexpected(item.error());
    return item->has_value();
  }

  Result<PipelineState> load() override {
    auto item = read_item();
    if (!item) return std::unexpected(item.error());
    PipelineState state;
    if (!*item) {
      loaded_epoch_.reset();
      return state;
    }
    const json& i = **item;
    state.epoch = dynamo_get_number(i, "epoch", 1);
    state.enabled = dynamo_get_bool(i, "enabled", true);
    state.lineage = dynamo_get_string(i, "lineage");
    state.resume_position.token = dynamo_get_string(i, "resume_position");
    state.resumed_after = dynamo_get_string(i, "resumed_after");
    auto requests = resync_requests_from_json(dynamo_get_string(i, "resync"));
    if (!requests) {
      return fail(ErrorKind::kCorruption,
                  fmt::format("the state of pipeline '{}' in DynamoDB table {} has an unreadable resync attribute",
                              o_.pipeline, o_.table));
    }
    state.resync_requests = std::move(*requests);
    loaded_epoch_ = i.contains("epoch") ? std::optional<uint64_t>(state.epoch) : std::nullopt;
    return state;
  }

  Status save(const PipelineState& state) override {
    std::string update =
        "SET #epoch = :e, #enabled = :en, #lineage = :l, #resume_position = :rp, #resumed_after = :ra, #resync = :rs";
    json values = {{":e", dynamo_number(state.epoch)},
                   {":en", dynamo_bool(state.enabled)},
                   {":l", dynamo_string(state.lineage)},
                   {":rp", dynamo_string(state.resume_position.token)},
                   {":ra", dynamo_string(state.resumed_after)},
                   {":rs", dynamo_string(resync_requests_to_json(state.resync_requests))}};
    if (loaded_epoch_ != state.epoch) {
      // A new epoch (RESET, or the first state): the WAL starts over, in the same write that moves the epoch.
      update += ", #wal_seq = :zero, #wal_landed = :zero, #wal_position = :nopos, #wal_writers = :nowriters";
      values[":zero"] = dynamo_number(0);
      values[":nopos"] = dynamo_string("");
      values[":nowriters"] = dynamo_string("[]");
    }
    if (lease_lost_) return fenced("saving its state");
    const uint64_t token = held_token_.load();
    if (token == 0) return fail(ErrorKind::kInternal, "the pipeline state was to be saved without its lease");
    const std::string condition = "#lease_token = :t";
    values[":t"] = dynamo_number(token);
    auto written = write_retrying([&] { return db_.update_item(o_.table, key(), update, condition, values); });
    if (!written) return std::unexpected(written.error());
    if (*written == ConditionalWrite::kConditionFailed) return fenced("saving its state");
    loaded_epoch_ = state.epoch;
    return ok();
  }

  Status set_enabled(bool enabled) override {
    auto written = write_retrying([&] {
      return db_.update_item(o_.table, key(), "SET #enabled = :en", "", {{":en", dynamo_bool(enabled)}});
    });
    if (!written) return std::unexpected(written.error());
    return ok();
  }

  Result<std::unique_ptr<PipelineLease>> acquire() override;
  // True when the lease (token, expiry) stayed as it is for a whole lease on this machine's clock.
  bool unchanged_for_a_lease(uint64_t token, uint64_t expiry);

  std::optional<std::string> holder() override {
    auto item = read_item();
    if (!item || !*item) return std::nullopt;
    return holder_of(**item);
  }

  PipelineStats load_stats() override {
    auto item = db_.get_item(o_.table, stats_key());
    if (!item || !*item) return {};
    return stats_from_json(dynamo_get_string(**item, "stats"));
  }

  Status save_stats(const PipelineStats& stats) override {
    if (lease_lost_) return ok();  // the counts are the new owner's to keep now
    auto written =
        db_.update_item(o_.table, stats_key(), "SET #stats = :s", "", {{":s", dynamo_string(stats_to_json(stats))}});
    if (!written) return std::unexpected(written.error());
    return ok();
  }

  WalCommitLog* wal_commit_log() override { return this; }

  // WalCommitLog
  Result<WalCommitPoint> read() override {
    auto item = read_item();
    if (!item) return std::unexpected(item.error());
    WalCommitPoint point;
    if (!*item) return point;
    point.committed_seq = dynamo_get_number(**item, "wal_seq");
    point.position.token = dynamo_get_string(**item, "wal_position");
    point.landed_seq = dynamo_get_number(**item, "wal_landed");
    point.writers = writers_from_json(dynamo_get_string(**item, "wal_writers", "[]"));
    point.lease_token = dynamo_get_number(**item, "lease_token");
    return point;
  }

  Status commit(uint64_t seq, const Position& position_after, const std::vector<WalWriterRange>& writers,
                uint64_t token) override {
    constexpr size_t kLargestPosition = 300 << 10;  // a DynamoDB item holds at most 400 KB
    if (position_after.token.size() > kLargestPosition) {
      return fail(ErrorKind::kBadInput,
                  fmt::format("the source position after batch {} is {} bytes, more than the DynamoDB state store "
                              "keeps (300 KiB); the source remembers too much (a File source over very many files: "
                              "move finished files away, or use the local state store)",
                              seq, position_after.token.size()));
    }
    auto written = db_.update_item(o_.table, key(), "SET #wal_seq = :s, #wal_position = :p, #wal_writers = :w",
                                   "#lease_token = :t AND #wal_seq = :prev",
                                   {{":s", dynamo_number(seq)},
                                    {":p", dynamo_string(position_after.token)},
                                    {":w", dynamo_string(writers_to_json(writers))},
                                    {":t", dynamo_number(token)},
                                    {":prev", dynamo_number(seq - 1)}});
    if (written && *written == ConditionalWrite::kApplied) return ok();
    if (!written && !is_transient(written.error())) return std::unexpected(written.error());
    // Refused, or not known whether it happened: the item says which. A retry by the caller is the same write with
    // the same condition, so it cannot apply twice.
    auto item = read_item();
    if (!item) return std::unexpected(written ? item.error() : written.error());
    const uint64_t holder = *item ? dynamo_get_number(**item, "lease_token") : 0;
    const uint64_t at = *item ? dynamo_get_number(**item, "wal_seq") : 0;
    if (holder != token) return fenced(fmt::format("committing batch {}", seq));
    if (at == seq) return ok();  // the earlier attempt was applied; its answer was lost
    if (!written) return std::unexpected(written.error());
    return fail(
        ErrorKind::kInternal,
        fmt::format("the state store holds batch {} as the last committed one where {} was expected", at, seq - 1));
  }

  Status mark_landed(uint64_t seq, uint64_t token) override {
    auto written = db_.update_item(o_.table, key(), "SET #wal_landed = :s", "#lease_token = :t AND #wal_landed < :s",
                                   {{":s", dynamo_number(seq)}, {":t", dynamo_number(token)}});
    if (written && *written == ConditionalWrite::kApplied) return ok();
    if (!written && !is_transient(written.error())) return std::unexpected(written.error());
    auto item = read_item();
    if (!item) return std::unexpected(written ? item.error() : written.error());
    if (!*item || dynamo_get_number(**item, "lease_token") != token) {
      return fenced(fmt::format("marking batch {} landed", seq));
    }
    if (dynamo_get_number(**item, "wal_landed") >= seq) return ok();
    if (!written) return std::unexpected(written.error());
    return fail(ErrorKind::kInternal, fmt::format("the landed mark of batch {} was refused", seq));
  }

  // Lease steps, used by DynamoDbLease. `valid_until` is set from the moment the request was sent.
  Result<ConditionalWrite> renew(uint64_t token, Clock::time_point& valid_until) {
    const auto sent = Clock::now();
    auto written = db_.update_item(o_.table, key(), "SET #lease_expires_ms = :x", "#lease_token = :t",
                                   {{":x", dynamo_number(wall_ms() + lease_ms())}, {":t", dynamo_number(token)}});
    if (written && *written == ConditionalWrite::kApplied) valid_until = sent + lease_duration();
    return written;
  }

  void release(uint64_t token) {
    held_token_ = 0;
    auto written = db_.update_item(o_.table, key(), "SET #lease_expires_ms = :zero", "#lease_token = :t",
                                   {{":zero", dynamo_number(0)}, {":t", dynamo_number(token)}});
    if (!written) spdlog::warn("could not release the lease (it runs out by itself): {}", written.error().message);
  }

  Error fenced_error(std::string_view doing) {
    auto item = read_item();
    const std::string who = item && *item ? holder_of(**item).value_or("another process") : "another process";
    return Error{ErrorKind::kFenced,
                 fmt::format("pipeline '{}' was taken over by {} while this process was {}; this process stops and "
                             "changes nothing more (what it committed is kept in the WAL)",
                             o_.pipeline, who, doing)};
  }

  uint64_t lease_ms() const { return static_cast<uint64_t>(o_.lease_seconds * 1000); }
  // The local view of a lease ends a fifth before the store's: the renewal travels, clocks drift.
  Clock::duration lease_duration() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.lease_seconds * 0.8));
  }

  std::atomic<uint64_t> held_token_{0};
  std::atomic<bool> lease_lost_{false};  // this process held the lease and lost it: it writes nothing more

 private:
  std::unexpected<Error> fenced(std::string_view doing) { return std::unexpected(fenced_error(doing)); }

  json stats_key() const { return {{"pipeline", dynamo_string(o_.pipeline + "/stats")}}; }

  std::optional<std::string> holder_of(const json& item) const {
    const uint64_t expires = dynamo_get_number(item, "lease_expires_ms");
    const uint64_t now = wall_ms();
    if (expires <= now) return std::nullopt;
    return fmt::format("{} (its lease in {} runs out in {:.1f} s unless renewed)",
                       dynamo_get_string(item, "lease_owner", "holder unknown"), where(),
                       static_cast<double>(expires - now) / 1000);
  }

  Result<std::optional<json>> read_item() {
    Result<std::optional<json>> item = fail(ErrorKind::kInternal, "not read");
    auto backoff = std::chrono::milliseconds(50);
    const auto started = Clock::now();
    while (true) {
      item = db_.get_item(o_.table, key());
      if (item || !is_transient(item.error()) ||
          Clock::now() - started > std::chrono::duration<double>(o_.retry_seconds)) {
        return item;
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    }
  }

  // For writes that are safe to repeat (the same SETs, or a condition that a repeat fails the same way).
  template <class Write>
  Result<ConditionalWrite> write_retrying(Write write) {
    auto backoff = std::chrono::milliseconds(50);
    const auto started = Clock::now();
    while (true) {
      auto written = write();
      if (written || !is_transient(written.error()) ||
          Clock::now() - started > std::chrono::duration<double>(o_.retry_seconds)) {
        return written;
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    }
  }

  friend class DynamoDbLease;
  DynamoDbStateOptions o_;
  DynamoDbClient db_;
  std::optional<uint64_t> loaded_epoch_;
};

Result<std::unique_ptr<PipelineLease>> DynamoDbStateStore::acquire() {
  const std::string me = lease_holder_description();
  const std::string my_process = process_identity(getpid());
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto item = read_item();
    if (!item) return std::unexpected(item.error());
    const uint64_t old_token = *item ? dynamo_get_number(**item, "lease_token") : 0;
    const uint64_t seen_expiry = *item ? dynamo_get_number(**item, "lease_expires_ms") : 0;
    if (*item && dynamo_get_string(**item, "lease_owner") == me &&
        dynamo_get_string(**item, "lease_process") == my_process) {
      // An earlier attempt of this very call was applied, its answer lost.
      held_token_ = old_token;
      return std::unique_ptr<PipelineLease>(new DynamoDbLease(*this, old_token, Clock::now()));
    }
    std::string condition = "attribute_not_exists(#lease_token)";
    json values = {{":t", dynamo_number(old_token + 1)}, {":owner", dynamo_string(me)},
                   {":proc", dynamo_string(my_process)}, {":x", dynamo_number(wall_ms() + lease_ms())},
                   {":zero", dynamo_number(0)},          {":nopos", dynamo_string("")},
                   {":nowriters", dynamo_string("[]")}};
    if (old_token > 0) {
      const std::string process = dynamo_get_string(**item, "lease_process");
      auto who = holder_of(**item);
      if (who && holder_died_on_this_machine(process)) {
        spdlog::info("pipeline '{}': taking over the lease of {}, which died on this machine", o_.pipeline, *who);
        condition = "#lease_token = :old AND #lease_process = :dead";
        values[":dead"] = dynamo_string(process);
      } else if (who) {
        return fail(ErrorKind::kLocked,
                    fmt::format("pipeline '{}' is already running ({}); run one sync per pipeline, or wait for it "
                                "to finish",
                                o_.pipeline, *who));
      } else {
        // Released (expiry 0), or ran out by this machine's clock, which may run ahead of its holder's: then watch
        // it for a whole lease on this machine's own clock. A holder that is alive renews it meanwhile.
        if (seen_expiry != 0 && !unchanged_for_a_lease(old_token, seen_expiry)) continue;
        condition = "#lease_token = :old AND #lease_expires_ms = :seen";
        values[":seen"] = dynamo_number(seen_expiry);
      }
      values[":old"] = dynamo_number(old_token);
    }
    const auto sent = Clock::now();
    auto written = db_.update_item(
        o_.table, key(),
        "SET #lease_token = :t, #lease_owner = :owner, #lease_process = :proc, #lease_expires_ms = :x, "
        "#wal_seq = if_not_exists(#wal_seq, :zero), #wal_landed = if_not_exists(#wal_landed, :zero), "
        "#wal_position = if_not_exists(#wal_position, :nopos), #wal_writers = if_not_exists(#wal_writers, :nowriters)",
        condition, values);
    if (!written && !is_transient(written.error())) return std::unexpected(written.error());
    if (!written || *written == ConditionalWrite::kConditionFailed) continue;  // look again: whose is it now?
    held_token_ = old_token + 1;
    return std::unique_ptr<PipelineLease>(new DynamoDbLease(*this, old_token + 1, sent + lease_duration()));
  }
  return fail(ErrorKind::kLocked,
              fmt::format("pipeline '{}': its lease in {} changes hands too often to be taken", o_.pipeline, where()));
}

bool DynamoDbStateStore::unchanged_for_a_lease(uint64_t token, uint64_t expiry) {
  spdlog::info(
      "pipeline '{}': its lease ran out without being released; waiting {:.0f} s to be sure its holder has "
      "stopped",
      o_.pipeline, o_.lease_seconds);
  const auto until = Clock::now() + std::chrono::duration<double>(o_.lease_seconds);
  while (Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::clamp<int64_t>(lease_ms() / 10, 20, 500)));
    auto item = read_item();
    if (!item || !*item) return false;
    if (dynamo_get_number(**item, "lease_token") != token || dynamo_get_number(**item, "lease_expires_ms") != expiry) {
      return false;
    }
  }
  return true;
}

DynamoDbLease::DynamoDbLease(DynamoDbStateStore& store, uint64_t token, Clock::time_point valid_until)
    : store_(store), token_(token), valid_until_(valid_until) {
  renewer_ = std::thread([this] { renew_loop(); });
}

DynamoDbLease::~DynamoDbLease() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  renewer_.join();
  if (!lost_) store_.release(token_);
}

Status DynamoDbLease::check() {
  std::lock_guard lock(mu_);
  if (lost_) return std::unexpected(*lost_);
  if (Clock::now() < valid_until_) return ok();
  return renew_locked();  // e.g. after a pause (SIGSTOP): ask the store before doing anything more
}

void DynamoDbLease::lose_locked(Error error) {
  if (lost_) return;
  spdlog::error("{}", error.message);
  lost_ = error;
  store_.lease_lost_ = true;
  if (on_lost_) on_lost_(error);
}

Status DynamoDbLease::renew_locked() {
  auto renewed = store_.renew(token_, valid_until_);
  if (renewed && *renewed == ConditionalWrite::kApplied) return ok();
  if (renewed) {
    lose_locked(store_.fenced_error("running"));
  } else if (Clock::now() >= valid_until_) {
    lose_locked(Error{ErrorKind::kUnavailable,
                      fmt::format("pipeline '{}': its lease could not be renewed before it ran out ({}); this process "
                                  "stops so that another may take over",
                                  store_.options().pipeline, renewed.error().message)});
  } else {
    spdlog::warn("lease renewal failed (retried): {}", renewed.error().message);
    return ok();
  }
  return std::unexpected(*lost_);
}

void DynamoDbLease::renew_loop() {
  const auto every = std::chrono::duration<double>(store_.options().lease_seconds / 3);
  std::unique_lock lock(mu_);
  while (!stopping_ && !lost_) {
    stop_cv_.wait_for(lock, every, [&] { return stopping_; });
    if (stopping_) break;
    (void)renew_locked();
  }
}

}  // namespace

Result<std::unique_ptr<StateStore>> open_dynamodb_state_store(const DynamoDbStateOptions& options) {
  DynamoDbClient db(options.service);
  if (auto ready = db.ensure_table(options.table, "pipeline"); !ready) {
    return fail(ready.error().kind,
                fmt::format("SKIPPR_STATE_DYNAMODB_TABLE={}: {}", options.table, ready.error().message));
  }
  return std::unique_ptr<StateStore>(new DynamoDbStateStore(options, std::move(db)));
}

}  // namespace skippr
