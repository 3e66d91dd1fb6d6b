#include "sources/postgres/cdc_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "clients/postgres/pg_client.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/pg_table_reader.h"
#include "sources/postgres/pgoutput.h"
#include "sources/postgres/replication_stream.h"

namespace skippr {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kOpField = "_skippr_op";
constexpr const char* kTruncateOp = "truncate";  // see emit_truncate and append_snapshot_end
constexpr const char* kOrderField = "_skippr_order";
constexpr size_t kEstimatedRowBytes = 200;  // only sizes the LIMIT of a snapshot page
constexpr size_t kMaxRowsPerPage = 50000;
constexpr int kIdleWaitMs = 100;                               // how long a poll waits for the next message
constexpr auto kMaxPollTime = std::chrono::milliseconds(500);  // so the engine can cut batches by time
constexpr auto kHeartbeat = std::chrono::seconds(10);          // well inside the server's wal_sender_timeout
constexpr uint64_t kLongPageHeaderBytes = 40;                  // SizeOfXLogLongPHD: the largest WAL page header
constexpr auto kReplyRequestEvery = std::chrono::milliseconds(200);
// A killed run's walsender lets go of the slot once the server notices the closed socket: wait for that.
constexpr auto kSlotBusyWait = std::chrono::seconds(15);

// What to do when the server has no free replication slot (SQLSTATE 53400, a config error: waiting frees none).
constexpr const char* kSlotsFullHint =
    ". Every slot the server allows is taken: drop the ones no pipeline reads (list them with SELECT slot_name, "
    "database, active FROM pg_replication_slots; drop one with SELECT pg_drop_replication_slot('<name>')), or raise "
    "max_replication_slots in postgresql.conf and restart the server";

// Values in the walsender session's output format that convert exactly like the snapshot's select expressions.
constexpr const char* kSessionSettings =
    "SET DateStyle = 'ISO'; SET TimeZone = 'UTC'; SET extra_float_digits = 3; SET bytea_output = 'hex'; SET "
    "IntervalStyle = 'postgres'";

// The column type of a column that appears in the stream after the source opened (ALTER TABLE ADD COLUMN).
std::string type_name_for_oid(uint32_t oid) {
  switch (oid) {
    case 16:
      return "boolean";
    case 20:
      return "bigint";
    case 21:
      return "smallint";
    case 23:
      return "integer";
    case 700:
      return "real";
    case 701:
      return "double precision";
    case 1082:
      return "date";
    case 1114:
      return "timestamp without time zone";
    case 1184:
      return "timestamp with time zone";
    case 114:
      return "json";
    case 3802:
      return "jsonb";
    case 17:
      return "bytea";
    default:
      return "text";
  }
}

// One value of a streamed change before it is appended: the stream's text (output form), a value fetched from the
// table (the snapshot's select-expression form), or one still to fetch (an unchanged TOASTed value the stream left
// out). nullopt text is NULL.
struct PendingValue {
  enum class From : char { kStream, kTable, kToFetch };
  From from = From::kStream;
  std::optional<std::string> text;
};
struct PendingRow {
  const char* op = "";
  std::string token;
  std::vector<PendingValue> values;  // by index in columns_ (a column added later is NULL here)
  bool to_fetch = false;             // some value is kToFetch
  bool gone = false;                 // fetched, but the key is no longer in the table: dropped (see fetch)
};

// Rows per statement that fetches unchanged TOASTed values (two parameters or so per row; libpq allows 65535).
constexpr size_t kFetchRowsPerQuery = 500;

// The slot and publication, and whether skippr.yml named them (a default name may give way to a position's).
struct CdcNames {
  std::string slot, publication;
  bool slot_given = false, publication_given = false;
};

// What the source parameters say beyond the connection and the table.
struct CdcOptions {
  bool primary_key_unique = false;  // the user vouches that primary_key is unique: checked in the snapshot
  enum class OnTruncate { kApply, kStop, kIgnore };
  OnTruncate on_truncate = OnTruncate::kApply;
  bool merge = false;  // landing: merge_by_key (a finished snapshot then also removes what it did not read)
};

Result<CdcOptions> cdc_options(const ConnectorContext& ctx) {
  CdcOptions options;
  const auto& p = ctx.params;
  if (p.contains("primary_key_unique") && !p["primary_key_unique"].is_null()) {
    if (!p["primary_key_unique"].is_boolean()) {
      return fail(ErrorKind::kConfig, fmt::format("source '{}': primary_key_unique must be true or false", ctx.name));
    }
    options.primary_key_unique = p["primary_key_unique"].get<bool>();
  }
  const std::string on_truncate =
      p.contains("on_truncate") && p["on_truncate"].is_string() ? p["on_truncate"].get<std::string>() : "apply";
  if (on_truncate != "apply" && on_truncate != "stop" && on_truncate != "ignore") {
    return fail(ErrorKind::kConfig,
                fmt::format("source '{}': on_truncate is '{}'; use apply, stop or ignore", ctx.name, on_truncate));
  }
  options.on_truncate = on_truncate == "apply"  ? CdcOptions::OnTruncate::kApply
                        : on_truncate == "stop" ? CdcOptions::OnTruncate::kStop
                                                : CdcOptions::OnTruncate::kIgnore;
  options.merge = ctx.landing == Landing::kMergeByKey;
  return options;
}

class CdcSource final : public Source {
 public:
  CdcSource(const ConnectorContext& ctx, std::string schema, std::string table, CdcMode mode, CdcNames names,
            CdcOptions options)
      : params_(ctx.params),
        what_(fmt::format("source '{}'", ctx.name)),
        name_(ctx.name),
        pipeline_(ctx.pipeline),
        schema_(std::move(schema)),
        table_(std::move(table)),
        qualified_(pg_qualified(schema_, table_)),
        mode_(mode),
        slot_(std::move(names.slot)),
        publication_(std::move(names.publication)),
        slot_given_(names.slot_given),
        publication_given_(names.publication_given),
        options_(options),
        key_(ctx.primary_key) {}

  ~CdcSource() override {
    // The reader thread has stopped: confirm what the last commits acknowledged (a kill skips this; harmless).
    if (stream_) (void)send_status(/*reply_requested=*/false);
  }

  Status open() override;
  Status seek(const Position& position) override;
  Result<Poll> poll(const Budget& budget) override;
  Status acknowledge(const Position& position) override;
  bool streaming() const override { return true; }

 private:
  Status check_source(PgConnection& conn);
  Status check_replica_identity(PgConnection& conn);
  Status check_key_unique(PgConnection& conn);
  Status check_no_duplicate_keys();
  Status ensure_publication(PgConnection& conn);
  void adopt_legacy_names(const CdcPosition& resume);
  void warn_about_legacy_slot();
  Status check_slot_owner();
  Status check_slot_not_ahead(const CdcPosition& resume, uint64_t confirmed) const;
  Result<std::optional<uint64_t>> slot_confirmed_flush();
  Status begin_snapshot(const std::optional<std::string>& exported);
  Result<Poll> poll_snapshot(const Budget& budget);
  Result<Poll> poll_stream(const Budget& budget);
  Status start_stream();
  Status drop_stream(const Error& error);
  Status handle(const PgoMessage& message, Batch& batch);
  Status on_relation(const PgoRelation& relation, Batch& batch);
  Status on_truncate();
  Status emit_truncate();
  void append_snapshot_end(Batch& batch) const;
  Status emit(const char* op, const PgoTuple& row, const PgoTuple* full_old_row, bool key_only);
  Status flush_pending(Poll& result);
  Status fetch_unchanged_toast();
  Status fetch_chunk(const std::vector<size_t>& rows, const std::vector<size_t>& wanted);
  Status append_pending(Batch& batch, const PendingRow& row, std::vector<DeadLetter>& dead) const;
  Status send_status(bool reply_requested);
  Status send_status_if_due();
  void start_batch(Batch& batch) const;

  nlohmann::json params_;
  std::string what_;
  std::string name_, pipeline_;
  std::string schema_, table_, qualified_;
  CdcMode mode_;
  std::string slot_, publication_;
  bool slot_given_, publication_given_;
  CdcOptions options_;
  std::vector<std::string> key_;
  bool key_backed_ = false;  // a primary key or unique index proves key_ unique
  std::vector<PgSourceColumn> columns_;

  std::optional<PgConnection> sql_;          // catalog checks and the snapshot read
  std::optional<PgConnection> replication_;  // the slot and the stream
  std::optional<ReplicationStream> stream_;
  uint64_t catch_up_lsn_ = 0;  // the end of WAL at open: drained only once the stream has passed it
  bool caught_up_ = false;

  CdcPosition pos_;
  // The transaction being streamed.
  bool in_tx_ = false;
  uint64_t tx_commit_lsn_ = 0;
  uint64_t tx_index_ = 0;
  // The table's relation in the stream: per relation column, the index in columns_ (-1: not read).
  std::optional<uint32_t> relid_;
  std::vector<int> relation_to_column_;
  size_t pending_bytes_ = 0;
  std::vector<PendingRow> pending_;  // the poll's changes, appended to its batch once unchanged TOAST is fetched

  std::mutex ack_mu_;
  uint64_t acked_lsn_ = 0;  // guarded by ack_mu_: the flush LSN the WAL commits allow
  uint64_t sent_lsn_ = 0;   // reader thread only
  Clock::time_point last_status_{};
  Clock::time_point last_reply_request_{};
};

Status CdcSource::open() {
  auto conn = PgConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  sql_.emplace(std::move(*conn));
  SKIPPR_TRY(sql_->execute(kSessionSettings));
  SKIPPR_TRY(check_source(*sql_));
  // The insert position, not pg_current_wal_lsn(): an asynchronous commit may not be written yet. At a page start
  // it points past the page header, where no record ends: the walsender's position stops at the page boundary.
  auto lsn = sql_->query("SELECT pg_current_wal_insert_lsn()::text, current_setting('wal_block_size')::int");
  if (!lsn) return std::unexpected(lsn.error());
  catch_up_lsn_ = parse_lsn(lsn->rows.at(0).at(0).value_or("")).value_or(0);
  const uint64_t into_page = catch_up_lsn_ % std::stoull(lsn->rows.at(0).at(1).value_or("8192"));
  if (into_page <= kLongPageHeaderBytes) catch_up_lsn_ -= into_page;

  auto repl = PgConnection::connect(params_, what_, /*replication=*/true);
  if (!repl) return std::unexpected(repl.error());
  replication_.emplace(std::move(*repl));
  return replication_->execute(kSessionSettings);
}

Status CdcSource::check_source(PgConnection& conn) {
  auto level = conn.query("SHOW wal_level");
  if (!level) return std::unexpected(level.error());
  if (const auto value = level->rows.at(0).at(0).value_or(""); value != "logical") {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: the server's wal_level is '{}', and CDC needs logical decoding; set wal_level = "
                            "logical in postgresql.conf and restart the server",
                            what_, value));
  }
  auto table = pg_describe_keyed_table(conn, qualified_, key_, what_, "CDC needs to apply updates and deletes");
  if (!table) return std::unexpected(table.error());
  columns_ = std::move(table->columns);
  key_ = std::move(table->key);
  auto rights = conn.query(
      "SELECT has_table_privilege(current_user, to_regclass($1), 'SELECT'), (SELECT rolreplication OR rolsuper FROM "
      "pg_roles WHERE rolname = current_user)",
      {qualified_});
  if (!rights) return std::unexpected(rights.error());
  if (rights->rows.at(0).at(0) != "t") {
    return fail(ErrorKind::kConfig, fmt::format("{}: the user may not read table {}; GRANT SELECT ON {} TO the user",
                                                what_, qualified_, qualified_));
  }
  if (rights->rows.at(0).at(1) != "t") {
    return fail(ErrorKind::kConfig, fmt::format("{}: the user may not use logical replication; ALTER ROLE <user> "
                                                "REPLICATION (or connect as a user that has it)",
                                                what_));
  }
  SKIPPR_TRY(check_replica_identity(conn));
  return check_key_unique(conn);
}

// merge_by_key keeps one row per key: a primary_key that two rows share would silently collapse them (and a delete
// of one would remove both). Only a primary key or unique index proves it unique; else the user must say so, and the
// snapshot checks it.
Status CdcSource::check_key_unique(PgConnection& conn) {
  auto unique = pg_key_is_unique(conn, qualified_, key_);
  if (!unique) return std::unexpected(unique.error());
  key_backed_ = *unique;
  if (*unique || options_.primary_key_unique) return ok();
  std::vector<std::string> quoted;
  for (const auto& k : key_) quoted.push_back(pg_quote_identifier(k));
  return fail(ErrorKind::kConfig,
              fmt::format("{}: primary_key ({}) of table {} is backed by no primary key or unique index, so rows "
                          "that share it would collapse into one row in the destination; create one (CREATE UNIQUE "
                          "INDEX ON {} ({})), name the table's real key in primary_key, or, if the values are "
                          "unique, set primary_key_unique: true on the source to have the snapshot check them",
                          what_, fmt::join(key_, ", "), qualified_, qualified_, fmt::join(quoted, ", ")));
}

// With primary_key_unique, the snapshot proves the key unique before its first row is read (inside the same
// snapshot, so the check and the read see the same rows). Later changes cannot be checked: the stream has no
// memory of other rows.
Status CdcSource::check_no_duplicate_keys() {
  std::vector<std::string> quoted, as_text;
  for (const auto& k : key_) {
    quoted.push_back(pg_quote_identifier(k));
    as_text.push_back(fmt::format("{}::text", quoted.back()));
  }
  auto rows = sql_->query(fmt::format("SELECT {}, count(*) FROM {} GROUP BY {} HAVING count(*) > 1 LIMIT 1",
                                      fmt::join(as_text, ", "), qualified_, fmt::join(quoted, ", ")));
  if (!rows) {
    return fail(
        rows.error().kind == ErrorKind::kConfig ? ErrorKind::kConfig : ErrorKind::kUnavailable,
        fmt::format("{}: checking that primary_key is unique in {}: {}", what_, qualified_, rows.error().message));
  }
  if (rows->rows.empty()) return ok();
  const auto& row = rows->rows[0];
  std::vector<std::string> values;
  for (size_t i = 0; i < key_.size(); ++i) values.push_back(row[i].value_or("NULL"));
  return fail(
      ErrorKind::kBadInput,
      fmt::format("{}: {} rows of table {} share primary_key ({}) = ({}), although primary_key_unique is "
                  "true; they would collapse into one row in the destination. Name columns in primary_key "
                  "that are unique together (or create a unique index), then RESET the pipeline",
                  what_, row[key_.size()].value_or("?"), qualified_, fmt::join(key_, ", "), fmt::join(values, ", ")));
}

// A delete (and a key-changing update) reaches the stream with the old key only when the replica identity holds it.
Status CdcSource::check_replica_identity(PgConnection& conn) {
  auto rows = conn.query("SELECT relreplident FROM pg_class WHERE oid = to_regclass($1)", {qualified_});
  if (!rows) return std::unexpected(rows.error());
  const std::string identity = rows->rows.at(0).at(0).value_or("");
  if (identity == "f") return ok();
  auto table_key = pg_primary_key(conn, qualified_);
  if (!table_key) return std::unexpected(table_key.error());
  auto sorted = [](std::vector<std::string> v) {
    std::ranges::sort(v);
    return v;
  };
  if (identity == "d" && !table_key->empty() && sorted(*table_key) == sorted(key_)) return ok();
  if (identity == "d" && table_key->empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: table {} has no primary key, so its default replica identity sends deletes and "
                            "updates without any key; run ALTER TABLE {} REPLICA IDENTITY FULL (or add a primary key)",
                            what_, qualified_, qualified_));
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{}: deletes on table {} would reach the stream without the key ({}); run ALTER TABLE {} "
                          "REPLICA IDENTITY FULL (or make the pipeline's primary_key the table's primary key)",
                          what_, qualified_,
                          identity == "d" ? "the replica identity is the table's primary key, not primary_key "
                                            "of the pipeline"
                                          : "its replica identity is neither the primary key nor FULL",
                          qualified_));
}

Status CdcSource::ensure_publication(PgConnection& conn) {
  auto found = conn.query("SELECT 1 FROM pg_publication WHERE pubname = $1", {publication_});
  if (!found) return std::unexpected(found.error());
  if (found->rows.empty()) {
    if (auto st = conn.execute(
            fmt::format("CREATE PUBLICATION {} FOR TABLE {}", pg_quote_identifier(publication_), qualified_));
        !st) {
      return fail(st.error().kind == ErrorKind::kUnavailable ? ErrorKind::kUnavailable : ErrorKind::kConfig,
                  fmt::format("{}: creating publication {} for table {} failed ({}); create it as the table's owner: "
                              "CREATE PUBLICATION {} FOR TABLE {}",
                              what_, publication_, qualified_, st.error().message, pg_quote_identifier(publication_),
                              qualified_));
    }
    return ok();
  }
  auto has = conn.query("SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3",
                        {publication_, schema_, table_});
  if (!has) return std::unexpected(has.error());
  if (has->rows.empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: publication {} does not include table {}; ALTER PUBLICATION {} "
                            "ADD TABLE {}",
                            what_, publication_, qualified_, pg_quote_identifier(publication_), qualified_));
  }
  return ok();
}

Result<std::optional<uint64_t>> CdcSource::slot_confirmed_flush() {
  auto rows = sql_->query(
      "SELECT confirmed_flush_lsn::text, plugin, database = current_database() FROM pg_replication_slots WHERE "
      "slot_name = $1",
      {slot_});
  if (!rows) return std::unexpected(rows.error());
  if (rows->rows.empty()) return std::optional<uint64_t>();
  const auto& row = rows->rows[0];
  if (row[1] != "pgoutput" || row[2] != "t") {
    return fail(ErrorKind::kConfig, fmt::format("{}: replication slot {} exists but is not a pgoutput slot of this "
                                                "database; choose another name with the `slot` parameter",
                                                what_, slot_));
  }
  return std::optional<uint64_t>(parse_lsn(row[0].value_or("")).value_or(0));
}

// Older versions named the default slot and publication skippr_<pipeline> alone, which two pipelines could share
// ("tp-a" and "tp_a"). A pipeline whose position names its old default slot goes on reading it (the position's slot
// wins, so no change is lost or read twice); its old publication stays too, since the slot's stream checks the
// publication as of each change, and a new one would not exist for the older changes.
void CdcSource::adopt_legacy_names(const CdcPosition& resume) {
  const std::string legacy = cdc_legacy_default_name(pipeline_);
  if (slot_given_ || resume.slot == slot_ || resume.slot != legacy) return;
  spdlog::info(
      "{}: keeps reading replication slot {} (the default name of older versions, named by the pipeline's "
      "position); a RESET moves the pipeline to slot {}",
      what_, legacy, slot_);
  slot_ = legacy;
  if (!publication_given_) publication_ = legacy;
}

// A fresh (or RESET) pipeline gets the new default slot; the old one would hold WAL on the server for ever.
void CdcSource::warn_about_legacy_slot() {
  const std::string legacy = cdc_legacy_default_name(pipeline_);
  if (slot_given_ || legacy == slot_) return;
  auto rows = sql_->query("SELECT 1 FROM pg_replication_slots WHERE slot_name = $1", {legacy});
  if (!rows || rows->rows.empty()) return;
  spdlog::warn(
      "{}: replication slot {} (the name older versions gave pipeline '{}') still exists and keeps WAL on "
      "the server; this pipeline now uses slot {}. If no other pipeline reads {}, drop it: SELECT "
      "pg_drop_replication_slot('{}')",
      what_, legacy, pipeline_, slot_, legacy, legacy);
}

namespace {

constexpr std::string_view kOwnerMarker = "skippr:";  // the comment of a publication: which pipeline reads which slot

struct SlotOwner {
  std::string pipeline, slot;
};

std::optional<SlotOwner> parse_owner(const std::optional<std::string>& comment) {
  if (!comment || !comment->starts_with(kOwnerMarker)) return std::nullopt;
  auto j = nlohmann::json::parse(comment->substr(kOwnerMarker.size()), nullptr, false);
  if (!j.is_object() || !j.contains("pipeline") || !j["pipeline"].is_string() || !j.contains("slot") ||
      !j["slot"].is_string()) {
    return std::nullopt;
  }
  return SlotOwner{j["pipeline"].get<std::string>(), j["slot"].get<std::string>()};
}

}  // namespace

// A slot hands each change to one reader only: a second pipeline on the same slot silently misses what the first
// consumed. Slots take no comment, so each pipeline records "pipeline P reads slot S" on its publication and checks
// that no other pipeline's publication in this database claims its slot.
Status CdcSource::check_slot_owner() {
  auto rows = sql_->query(
      "SELECT pubname, obj_description(oid, 'pg_publication') FROM pg_publication WHERE obj_description(oid, "
      "'pg_publication') LIKE 'skippr:%' OR pubname = $1",
      {publication_});
  if (!rows) return std::unexpected(rows.error());
  std::optional<std::string> my_comment;
  for (const auto& row : rows->rows) {
    if (row[0] == publication_) my_comment = row[1];
    auto owner = parse_owner(row[1]);
    if (!owner || owner->slot != slot_ || owner->pipeline == pipeline_) continue;
    const std::string fix = slot_given_
                                ? fmt::format(
                                      "Remove `slot` from source '{}' to give pipeline '{}' a slot of its own (the "
                                      "default, {}), or name another one",
                                      name_, pipeline_, cdc_default_name(pipeline_))
                                : fmt::format("RESET PIPELINE {} to move it to a slot of its own ({})", pipeline_,
                                              cdc_default_name(pipeline_));
    return fail(ErrorKind::kConfig,
                fmt::format("{}: replication slot {} is already read by pipeline '{}' (recorded on publication {}), "
                            "and pipeline '{}' cannot share it: a slot hands each change to one reader only, so "
                            "both would miss changes. {}",
                            what_, slot_, owner->pipeline, row[0].value_or(""), pipeline_, fix));
  }
  const auto mine = parse_owner(my_comment);
  const bool claim = !my_comment || (mine && mine->pipeline == pipeline_ && mine->slot != slot_);
  if (!claim) return ok();
  const std::string marker =
      fmt::format("{}{}", kOwnerMarker, nlohmann::json{{"pipeline", pipeline_}, {"slot", slot_}}.dump());
  if (auto st = sql_->execute(
          fmt::format("COMMENT ON PUBLICATION {} IS {}", pg_quote_identifier(publication_), pg_quote_literal(marker)));
      !st) {
    // Only the publication's owner may comment: the check above then relies on the other pipelines' records.
    spdlog::info("{}: could not record on publication {} that pipeline '{}' reads slot {}: {}", what_, publication_,
                 pipeline_, slot_, st.error().message);
  }
  return ok();
}

// The slot's confirmed flush only moves after this pipeline committed a position past it. A slot ahead of the
// position was read by someone else (another pipeline naming the same slot, or this pipeline's DATA_DIR restored
// from an older copy): the changes in between are gone for this pipeline, and going on would silently skip them.
Status CdcSource::check_slot_not_ahead(const CdcPosition& resume, uint64_t confirmed) const {
  const uint64_t allowed = resume.snapshot ? resume.consistent_lsn : resume.confirmable_lsn();
  if (confirmed <= allowed) return ok();
  return fail(ErrorKind::kConfig,
              fmt::format("{}: replication slot {} has confirmed changes up to {}, past this pipeline's position {}: "
                          "another reader consumed them (a second pipeline with the same `slot`, or an older copy of "
                          "DATA_DIR), so they cannot be read again. Give every pipeline its own slot (leave `slot` "
                          "unset) and RESET PIPELINE {} to read the table again",
                          what_, slot_, format_lsn(confirmed), format_lsn(allowed), pipeline_));
}

Status CdcSource::seek(const Position& position) {
  std::optional<CdcPosition> resume;
  if (!position.empty()) {
    auto parsed = CdcPosition::parse(position);
    if (!parsed) return std::unexpected(parsed.error());
    adopt_legacy_names(*parsed);
    if (parsed->slot != slot_) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the pipeline reads from replication slot {}, not {}; put slot: "
                                                  "{} back, or RESET the pipeline to start again from a snapshot",
                                                  what_, parsed->slot, slot_, parsed->slot));
    }
    resume = *parsed;
  } else {
    warn_about_legacy_slot();
  }
  // After the names are settled (a position may keep an older default); before the slot, so that the slot's stream
  // never meets changes older than its publication.
  SKIPPR_TRY(ensure_publication(*sql_));
  SKIPPR_TRY(check_slot_owner());
  auto confirmed = slot_confirmed_flush();
  if (!confirmed) return std::unexpected(confirmed.error());
  if (resume && !*confirmed) {
    return fail(ErrorKind::kConfig, fmt::format("{}: replication slot {} no longer exists, so the changes since the "
                                                "last run cannot be read; RESET the pipeline to read the table again",
                                                what_, slot_));
  }
  if (resume) SKIPPR_TRY(check_slot_not_ahead(*resume, **confirmed));
  std::optional<std::string> exported;
  uint64_t consistent = confirmed->value_or(0);
  if (!*confirmed) {
    const char* snapshot_action = mode_ == CdcMode::kSnapshotThenCdc ? "export" : "nothing";
    auto created = run_replication_command(*replication_,
                                           fmt::format("CREATE_REPLICATION_SLOT {} LOGICAL pgoutput (SNAPSHOT '{}')",
                                                       pg_quote_identifier(slot_), snapshot_action));
    if (!created) {
      return fail(
          created.error().kind == ErrorKind::kUnavailable ? ErrorKind::kUnavailable : ErrorKind::kConfig,
          fmt::format("{}: creating replication slot {} failed: {}{}", what_, slot_, created.error().message,
                      created.error().message.find("replication slots") != std::string::npos ? kSlotsFullHint : ""));
    }
    consistent = parse_lsn(created->rows.at(0).at(1).value_or("")).value_or(0);
    if (mode_ == CdcMode::kSnapshotThenCdc) exported = created->rows.at(0).at(2);
  }
  {
    std::lock_guard lock(ack_mu_);
    acked_lsn_ = consistent;  // never confirm below what the slot already has
  }
  sent_lsn_ = consistent;
  if (resume) {
    pos_ = *resume;
  } else if (mode_ == CdcMode::kSnapshotThenCdc) {
    pos_ = CdcPosition{};
    pos_.slot = slot_;
    pos_.snapshot = true;
    pos_.consistent_lsn = consistent;
  } else {
    pos_ = CdcPosition::stream_from(slot_, consistent);
  }
  if (pos_.snapshot) return begin_snapshot(exported);
  return ok();
}

// The table is read in key order inside one REPEATABLE READ transaction. With the slot's exported snapshot it holds
// exactly the rows committed before the consistent point, and the stream brings everything after. When a run was
// killed mid-snapshot the export is gone: the rest is read (after the last key committed) from a fresh, later
// snapshot while the stream still starts at the consistent point. Rows then may show changes the stream replays
// too; with merge_by_key that converges, because every streamed change outranks the snapshot rows' token
// (consistent point << 32) and is applied after them, and a row deleted before the fresh snapshot is absent from it
// and deleted again by its streamed delete.
Status CdcSource::begin_snapshot(const std::optional<std::string>& exported) {
  SKIPPR_TRY(sql_->execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  if (exported) SKIPPR_TRY(sql_->execute(fmt::format("SET TRANSACTION SNAPSHOT {}", pg_quote_literal(*exported))));
  if (!key_backed_) return check_no_duplicate_keys();  // only primary_key_unique gets here
  return ok();
}

void CdcSource::start_batch(Batch& batch) const {
  for (const auto& c : columns_) batch.add_column({c.name, c.type});
  batch.add_column({kOpField, Type::kString});
  batch.add_column({kOrderField, Type::kString});
}

Result<Poll> CdcSource::poll(const Budget& budget) {
  if (pos_.snapshot) return poll_snapshot(budget);
  return poll_stream(budget);
}

Result<Poll> CdcSource::poll_snapshot(const Budget& budget) {
  Poll result;
  const size_t limit =
      std::clamp<size_t>(std::min(budget.max_rows, budget.max_bytes / kEstimatedRowBytes), 1, kMaxRowsPerPage);
  std::vector<std::optional<std::string>> params(pos_.after.begin(), pos_.after.end());
  auto rows = sql_->query(pg_keyset_select_sql(qualified_, columns_, key_, !pos_.after.empty(), limit), params);
  if (!rows) {
    return fail(rows.error().kind == ErrorKind::kConfig ? ErrorKind::kConfig : ErrorKind::kUnavailable,
                fmt::format("{}: reading {}: {}", what_, qualified_, rows.error().message));
  }
  Batch& batch = result.records;
  start_batch(batch);
  const std::string token = cdc_order_token(pos_.consistent_lsn, 0);
  for (const auto& row : rows->rows) {
    SKIPPR_TRY(pg_append_row(batch, columns_, row, what_, qualified_, result.dead_letters));
    batch.columns[columns_.size()].append_string("insert");
    batch.columns[columns_.size() + 1].append_string(token);
    batch.rows += 1;
  }
  if (!rows->rows.empty()) {
    const auto& last = rows->rows.back();
    pos_.after.clear();
    for (size_t i = 0; i < key_.size(); ++i) pos_.after.push_back(last[columns_.size() + i].value_or(""));
  }
  if (rows->rows.size() < limit) {  // the table is read: stream from the consistent point on
    if (options_.merge) append_snapshot_end(batch);
    SKIPPR_TRY(sql_->execute("COMMIT"));
    pos_ = CdcPosition::stream_from(slot_, pos_.consistent_lsn);
  }
  result.position_after = pos_.to_position();
  return result;
}

Status CdcSource::start_stream() {
  ReplicationStream stream(*replication_, what_);
  const auto give_up = Clock::now() + kSlotBusyWait;
  while (true) {
    auto started = stream.start(slot_, pos_.confirmable_lsn(), publication_);
    if (started) break;
    if (started.error().kind != ErrorKind::kLocked || Clock::now() >= give_up) return started;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stream_.emplace(std::move(stream));
  return ok();
}

// A broken stream (the server restarted, the walsender timed out while the engine was blocked) is not a failure of
// the run: reconnect, and the next poll starts streaming after the position again (a partly read transaction is
// resent and its delivered events skipped).
Status CdcSource::drop_stream(const Error& error) {
  if (error.kind != ErrorKind::kUnavailable) return std::unexpected(error);
  spdlog::warn("{}: the replication stream broke, reconnecting: {}", what_, error.message);
  stream_.reset();
  replication_.reset();
  in_tx_ = false;
  auto repl = PgConnection::connect(params_, what_, /*replication=*/true);
  if (!repl) return std::unexpected(repl.error());
  replication_.emplace(std::move(*repl));
  return replication_->execute(kSessionSettings);
}

Result<Poll> CdcSource::poll_stream(const Budget& budget) {
  if (!stream_) SKIPPR_TRY(start_stream());
  Poll result;
  start_batch(result.records);
  pending_bytes_ = 0;
  pending_.clear();
  const auto deadline = Clock::now() + kMaxPollTime;
  while (pending_.size() < budget.max_rows && pending_bytes_ < budget.max_bytes && Clock::now() < deadline) {
    // Until the catch-up point is passed, ask the server regularly how far it has decoded (it answers with a
    // keepalive), even while changes keep coming: a --once run must end although the workload goes on.
    Status sent = ok();
    if (!caught_up_ && Clock::now() - last_reply_request_ >= kReplyRequestEvery) {
      sent = send_status(/*reply_requested=*/true);
      last_reply_request_ = Clock::now();
    } else {
      sent = send_status_if_due();
    }
    Result<std::optional<ReplicationFrame>> frame = std::unexpected(Error{});
    if (sent) {
      frame = stream_->next(kIdleWaitMs);
    } else {
      frame = std::unexpected(sent.error());
    }
    if (!frame) {  // the rows so far stand with their position; the next poll restarts the stream after it
      SKIPPR_TRY(drop_stream(frame.error()));
      break;
    }
    if (!*frame) {  // nothing more right now
      result.drained = caught_up_ && !in_tx_;
      break;
    }
    if ((*frame)->kind == ReplicationFrame::Kind::kKeepalive) {
      if ((*frame)->reply_requested) {
        if (auto st = send_status(false); !st) {
          SKIPPR_TRY(drop_stream(st.error()));
          break;
        }
      }
      // The walsender sends a transaction's changes before it moves past its commit, so a keepalive beyond the
      // catch-up point means every transaction committed before open() is here.
      if (!caught_up_ && !in_tx_ && (*frame)->wal_end >= catch_up_lsn_) {
        caught_up_ = true;
        result.drained = true;
        break;
      }
      continue;
    }
    auto message = decode_pgoutput((*frame)->payload);
    if (!message) {
      return fail(message.error().kind, fmt::format("{}: slot {}: {}", what_, slot_, message.error().message));
    }
    SKIPPR_TRY(handle(*message, result.records));
  }
  SKIPPR_TRY(flush_pending(result));
  result.position_after = pos_.to_position();
  return result;
}

Status CdcSource::handle(const PgoMessage& message, Batch& batch) {
  if (const auto* begin = std::get_if<PgoBegin>(&message)) {
    in_tx_ = true;
    tx_commit_lsn_ = begin->final_lsn;
    tx_index_ = 0;
    return ok();
  }
  if (const auto* commit = std::get_if<PgoCommit>(&message)) {
    in_tx_ = false;
    const bool ahead = commit->commit_lsn > pos_.lsn || (commit->commit_lsn == pos_.lsn && !pos_.tx_done);
    if (ahead) {  // a transaction the position does not cover yet (a resent one leaves it alone)
      pos_.lsn = commit->commit_lsn;
      pos_.index = tx_index_;
      pos_.tx_done = true;
      pos_.end_lsn = commit->end_lsn;
    }
    return ok();
  }
  if (const auto* relation = std::get_if<PgoRelation>(&message)) return on_relation(*relation, batch);
  if (const auto* insert = std::get_if<PgoInsert>(&message)) {
    if (insert->relid != relid_) return ok();
    return emit("insert", insert->row, nullptr, false);
  }
  if (const auto* update = std::get_if<PgoUpdate>(&message)) {
    if (update->relid != relid_) return ok();
    const PgoTuple* old_row = update->old_kind ? &update->old_row : nullptr;
    if (old_row) {
      // The key changed when an old key differs from the new row's: delete the old key, then upsert the new one.
      bool key_changed = false;
      for (size_t j = 0; j < relation_to_column_.size() && j < old_row->size(); ++j) {
        const int c = relation_to_column_[j];
        if (c < 0 || std::ranges::find(key_, columns_[c].name) == key_.end()) continue;
        const PgoValue& before = (*old_row)[j];
        const PgoValue& after = update->row.at(j);
        if (after.kind != PgoValue::Kind::kUnchangedToast && (before.kind != after.kind || before.text != after.text)) {
          key_changed = true;
        }
      }
      if (key_changed) SKIPPR_TRY(emit("delete", *old_row, nullptr, true));
    }
    // Only a whole old row (REPLICA IDENTITY FULL) holds the unchanged values; an old key ('K') has NULL elsewhere.
    return emit("update", update->row, update->old_kind == 'O' ? &update->old_row : nullptr, false);
  }
  if (const auto* del = std::get_if<PgoDelete>(&message)) {
    if (del->relid != relid_) return ok();
    return emit("delete", del->old_row, nullptr, true);
  }
  if (const auto* truncate = std::get_if<PgoTruncate>(&message)) {
    if (relid_ && std::ranges::find(truncate->relids, *relid_) != truncate->relids.end()) return on_truncate();
  }
  return ok();
}

// A TRUNCATE has no rows to stream. It is still in the slot after a RESET (the slot stays), so the message names
// ways forward that get past it.
Status CdcSource::on_truncate() {
  if (options_.on_truncate == CdcOptions::OnTruncate::kApply) return emit_truncate();
  if (options_.on_truncate == CdcOptions::OnTruncate::kIgnore) {
    spdlog::warn(
        "{}: table {} was truncated (commit {}); on_truncate: ignore leaves the rows it removed in the "
        "destination",
        what_, qualified_, format_lsn(tx_commit_lsn_));
    return ok();
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{}: table {} was truncated (commit {}), and on_truncate is stop. To go on, either set "
                          "on_truncate: apply (the destination's rows are removed too) or ignore on the source and "
                          "run again (the destination keeps the rows the "
                          "truncate removed: delete them there), or read the table afresh: drop the slot (SELECT "
                          "pg_drop_replication_slot('{}')), then RESET PIPELINE {} and run again",
                          what_, qualified_, format_lsn(tx_commit_lsn_), slot_, pipeline_));
}

// A TRUNCATE as a change of its own: _skippr_op = truncate, every column NULL. A merging sink deletes every row
// older than its order token.
Status CdcSource::emit_truncate() {
  const uint64_t index = tx_index_++;
  if (!in_tx_) return fail(ErrorKind::kCorruption, fmt::format("{}: a change outside a transaction", what_));
  if (pos_.covers(tx_commit_lsn_, index)) return ok();
  pending_.push_back(PendingRow{kTruncateOp, cdc_order_token(tx_commit_lsn_, index + 1),
                                std::vector<PendingValue>(columns_.size()), false, false});
  pos_.lsn = tx_commit_lsn_;
  pos_.index = index + 1;
  pos_.tx_done = false;
  return ok();
}

// The end of a snapshot into merge_by_key: a truncate with the snapshot rows' own order token, so the destination
// drops every row older than the snapshot that the snapshot did not read again (rows deleted while a dropped slot
// or a RESET lost their deletes, rows a TRUNCATE removed). The snapshot's rows carry the same token and stay; every
// change streamed later outranks it.
void CdcSource::append_snapshot_end(Batch& batch) const {
  for (size_t c = 0; c < columns_.size(); ++c) batch.columns[c].append_null();
  batch.columns[columns_.size()].append_string(kTruncateOp);
  batch.columns[columns_.size() + 1].append_string(cdc_order_token(pos_.consistent_lsn, 0));
  batch.rows += 1;
}

Status CdcSource::on_relation(const PgoRelation& relation, Batch& batch) {
  if (relation.schema != schema_ || relation.name != table_) return ok();
  relid_ = relation.relid;
  relation_to_column_.clear();
  for (const auto& rc : relation.columns) {
    auto it = std::ranges::find_if(columns_, [&](const PgSourceColumn& c) { return c.name == rc.name; });
    if (it == columns_.end()) {  // added since open(): a new nullable column downstream (additive evolution)
      PgSourceColumn added{rc.name, type_name_for_oid(rc.type_oid), Type::kString};
      added.type = pg_source_type(added.pg_type);
      columns_.push_back(added);
      batch.add_column({added.name, added.type});
      it = columns_.end() - 1;
    }
    relation_to_column_.push_back(static_cast<int>(it - columns_.begin()));
  }
  return ok();
}

// One change of the table, as a row: the tuple's columns (only the key for a delete), the op and the order token.
// It waits in pending_ until the poll ends, so the unchanged TOASTed values of all its rows are fetched at once.
Status CdcSource::emit(const char* op, const PgoTuple& row, const PgoTuple* full_old_row, bool key_only) {
  const uint64_t index = tx_index_++;
  if (!in_tx_) return fail(ErrorKind::kCorruption, fmt::format("{}: a change outside a transaction", what_));
  if (pos_.covers(tx_commit_lsn_, index)) return ok();  // delivered before a restart; the server resent it
  PendingRow pending{op, cdc_order_token(tx_commit_lsn_, index + 1), std::vector<PendingValue>(columns_.size())};
  for (size_t j = 0; j < relation_to_column_.size() && j < row.size(); ++j) {
    const int c = relation_to_column_[j];
    const bool is_key = std::ranges::find(key_, columns_[c].name) != key_.end();
    if (key_only && !is_key) continue;
    const PgoValue* v = &row[j];
    if (v->kind == PgoValue::Kind::kUnchangedToast && full_old_row && j < full_old_row->size() &&
        (*full_old_row)[j].kind == PgoValue::Kind::kText) {
      v = &(*full_old_row)[j];  // REPLICA IDENTITY FULL: the old row carries the unchanged value
    }
    PendingValue& value = pending.values[c];
    if (v->kind == PgoValue::Kind::kUnchangedToast) {
      if (is_key) {  // the fetch needs the key itself
        return fail(ErrorKind::kConfig,
                    fmt::format("{}: an update of table {} left the large (TOASTed) value of key column {} out of "
                                "the stream; run ALTER TABLE {} REPLICA IDENTITY FULL so later updates carry it, and "
                                "RESET the pipeline to read past this one",
                                what_, qualified_, pg_quote_identifier(columns_[c].name), qualified_));
      }
      value.from = PendingValue::From::kToFetch;
      pending.to_fetch = true;
      continue;
    }
    if (v->kind == PgoValue::Kind::kText) value.text = v->text;
    pending_bytes_ += value.text ? value.text->size() : 1;
  }
  pending_.push_back(std::move(pending));
  pos_.lsn = tx_commit_lsn_;
  pos_.index = index + 1;
  pos_.tx_done = false;
  return ok();
}

Status CdcSource::flush_pending(Poll& result) {
  SKIPPR_TRY(fetch_unchanged_toast());
  Batch& batch = result.records;
  for (const auto& row : pending_) {
    if (!row.gone) SKIPPR_TRY(append_pending(batch, row, result.dead_letters));
  }
  pending_.clear();
  return ok();
}

// Under REPLICA IDENTITY DEFAULT an update leaves out every large (TOASTed) value it did not change, and a
// key-changing update has no old row to take them from: writing NULL would destroy them in the destination. They
// are read from the table by the row's (new) key, over the SQL connection, for all rows of the poll at once. The
// table may hold a later version of the row than this change; that converges under merge_by_key, because every
// later change of the key is in the stream after this one and outranks it. A key no longer in the table was
// deleted (or moved) by a later, committed change, whose delete follows in the stream: the change is dropped, and
// the key ends deleted either way. So no NULL is ever written for an unchanged value.
Status CdcSource::fetch_unchanged_toast() {
  std::vector<size_t> rows;
  std::vector<bool> wanted(columns_.size(), false);
  for (size_t r = 0; r < pending_.size(); ++r) {
    if (!pending_[r].to_fetch) continue;
    rows.push_back(r);
    for (size_t c = 0; c < pending_[r].values.size(); ++c) {
      if (pending_[r].values[c].from == PendingValue::From::kToFetch) wanted[c] = true;
    }
  }
  std::vector<size_t> wanted_columns;
  for (size_t c = 0; c < wanted.size(); ++c)
    if (wanted[c]) wanted_columns.push_back(c);
  for (size_t first = 0; first < rows.size(); first += kFetchRowsPerQuery) {
    const std::vector<size_t> chunk(
        rows.begin() + static_cast<std::ptrdiff_t>(first),
        rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), first + kFetchRowsPerQuery)));
    SKIPPR_TRY(fetch_chunk(chunk, wanted_columns));
  }
  return ok();
}

Status CdcSource::fetch_chunk(const std::vector<size_t>& rows, const std::vector<size_t>& wanted) {
  std::vector<size_t> key_columns;
  for (const auto& k : key_) {
    key_columns.push_back(static_cast<size_t>(
        std::ranges::find_if(columns_, [&](const PgSourceColumn& c) { return c.name == k; }) - columns_.begin()));
  }
  std::vector<std::optional<std::string>> params;
  std::vector<std::string> tuples, names = {"_skippr_i"}, join;
  for (size_t i = 0; i < key_.size(); ++i) {
    names.push_back(fmt::format("_skippr_k{}", i));
    join.push_back(fmt::format("t.{} = v._skippr_k{}", pg_quote_identifier(key_[i]), i));
  }
  for (size_t r : rows) {
    std::vector<std::string> tuple;
    params.push_back(std::to_string(r));
    tuple.push_back(fmt::format("${}::bigint", params.size()));
    for (size_t c : key_columns) {
      params.push_back(pending_[r].values[c].text);  // a key is never left out (see emit)
      tuple.push_back(fmt::format("${}::{}", params.size(), columns_[c].pg_type));
    }
    tuples.push_back(fmt::format("({})", fmt::join(tuple, ", ")));
  }
  std::vector<std::string> select = {"v._skippr_i::text"};
  for (size_t c : wanted) select.push_back(pg_select_expression(columns_[c]));
  const std::string sql =
      fmt::format("SELECT {} FROM (VALUES {}) AS v({}) JOIN {} t ON {}", fmt::join(select, ", "),
                  fmt::join(tuples, ", "), fmt::join(names, ", "), qualified_, fmt::join(join, " AND "));
  auto found = sql_->query(sql, params);
  if (!found) {
    return fail(found.error().kind == ErrorKind::kUnavailable ? ErrorKind::kUnavailable : ErrorKind::kConfig,
                fmt::format("{}: updates of table {} left unchanged large (TOASTed) values out of the stream, and "
                            "reading them from the table by key failed: {}. Run again, or ALTER TABLE {} REPLICA "
                            "IDENTITY FULL so that later updates carry them",
                            what_, qualified_, found.error().message, qualified_));
  }
  for (size_t r : rows) pending_[r].gone = true;
  for (const auto& row : found->rows) {
    PendingRow& pending = pending_.at(std::stoull(row.at(0).value_or("0")));
    pending.gone = false;
    for (size_t w = 0; w < wanted.size(); ++w) {
      PendingValue& value = pending.values[wanted[w]];
      if (value.from != PendingValue::From::kToFetch) continue;
      value = {PendingValue::From::kTable, row.at(w + 1)};
    }
  }
  for (size_t r : rows) {
    if (pending_[r].gone) {
      spdlog::debug(
          "{}: dropped an update of {} whose key a later change removed (its unchanged TOASTed values are "
          "gone with it)",
          what_, qualified_);
    }
  }
  return ok();
}

Status CdcSource::append_pending(Batch& batch, const PendingRow& row, std::vector<DeadLetter>& dead) const {
  for (size_t c = 0; c < columns_.size(); ++c) {
    Column& column = batch.columns[static_cast<size_t>(batch.schema.index_of(columns_[c].name))];
    const PendingValue* value = c < row.values.size() ? &row.values[c] : nullptr;
    const std::optional<std::string> none;
    const std::optional<std::string>& text = value ? value->text : none;
    const bool from_table = value && value->from == PendingValue::From::kTable;
    if (auto st = from_table ? pg_append_text_value(column, text) : pg_append_output_text(column, columns_[c], text);
        !st) {
      if (!pg_is_infinite(column.type, text)) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("{}: column {} of {}: {}", what_, pg_quote_identifier(columns_[c].name), qualified_,
                                st.error().message));
      }
      column.append_null();
      nlohmann::json key;
      for (const auto& k : key_) {
        const auto it = std::ranges::find_if(columns_, [&](const PgSourceColumn& s) { return s.name == k; });
        const auto& v = row.values.at(static_cast<size_t>(it - columns_.begin())).text;
        key[k] = v ? nlohmann::json(*v) : nlohmann::json();
      }
      dead.push_back(
          pg_infinite_dead_letter(qualified_, columns_[c], *text,
                                  nlohmann::json{{"key", key}, {"_skippr_op", row.op}, {"_skippr_order", row.token}}));
    }
  }
  batch.columns[static_cast<size_t>(batch.schema.index_of(kOpField))].append_string(row.op);
  batch.columns[static_cast<size_t>(batch.schema.index_of(kOrderField))].append_string(row.token);
  batch.rows += 1;
  return ok();
}

Status CdcSource::acknowledge(const Position& position) {
  auto parsed = CdcPosition::parse(position);
  if (!parsed) return std::unexpected(parsed.error());
  std::lock_guard lock(ack_mu_);
  acked_lsn_ = std::max(acked_lsn_, parsed->confirmable_lsn());
  return ok();
}

Status CdcSource::send_status(bool reply_requested) {
  uint64_t flush = 0;
  {
    std::lock_guard lock(ack_mu_);
    flush = acked_lsn_;
  }
  SKIPPR_TRY(stream_->send_status(flush, reply_requested));
  sent_lsn_ = flush;
  last_status_ = Clock::now();
  return ok();
}

Status CdcSource::send_status_if_due() {
  uint64_t acked = 0;
  {
    std::lock_guard lock(ack_mu_);
    acked = acked_lsn_;
  }
  if (acked > sent_lsn_ || Clock::now() - last_status_ >= kHeartbeat) return send_status(false);
  return ok();
}

}  // namespace

std::string cdc_legacy_default_name(std::string_view pipeline) {
  std::string name = "skippr_";
  for (char c : pipeline) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name.push_back((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ? lower : '_');
  }
  return name.substr(0, 63);  // NAMEDATALEN - 1
}

std::string cdc_default_name(std::string_view pipeline) {
  uint32_t hash = 2166136261u;  // FNV-1a over the exact name: "tp-a" and "tp_a" differ here
  for (char c : pipeline) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  // 7 ("skippr_") + 47 + 1 + 8 = 63 = NAMEDATALEN - 1.
  return fmt::format("{}_{:08x}", cdc_legacy_default_name(pipeline).substr(0, 54), hash);
}

Result<std::unique_ptr<Source>> make_cdc_source(const ConnectorContext& ctx, const std::string& schema,
                                                const std::string& table, CdcMode mode) {
  auto given = [&](const char* name) { return ctx.params.contains(name) && ctx.params[name].is_string(); };
  auto param = [&](const char* name) {
    return given(name) ? ctx.params[name].get<std::string>() : cdc_default_name(ctx.pipeline);
  };
  CdcNames names{param("slot"), param("publication"), given("slot"), given("publication")};
  const std::string& slot = names.slot;
  const bool valid_slot = !slot.empty() && slot.size() <= 63 && std::ranges::all_of(slot, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!valid_slot) {
    return fail(ErrorKind::kConfig, fmt::format("source '{}': slot '{}' is not a valid replication slot name (use "
                                                "lowercase letters, digits and _, at most 63)",
                                                ctx.name, slot));
  }
  auto options = cdc_options(ctx);
  if (!options) return std::unexpected(options.error());
  return std::make_unique<CdcSource>(ctx, schema, table, mode, std::move(names), *options);
}

}  // namespace skippr
