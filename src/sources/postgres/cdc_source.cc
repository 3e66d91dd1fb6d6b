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

class CdcSource final : public Source {
 public:
  CdcSource(const ConnectorContext& ctx, std::string schema, std::string table, CdcMode mode, std::string slot,
            std::string publication)
      : params_(ctx.params),
        what_(fmt::format("source '{}'", ctx.name)),
        schema_(std::move(schema)),
        table_(std::move(table)),
        qualified_(pg_qualified(schema_, table_)),
        mode_(mode),
        slot_(std::move(slot)),
        publication_(std::move(publication)),
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
  Status ensure_publication(PgConnection& conn);
  Result<std::optional<uint64_t>> slot_confirmed_flush();
  Status begin_snapshot(const std::optional<std::string>& exported);
  Result<Poll> poll_snapshot(const Budget& budget);
  Result<Poll> poll_stream(const Budget& budget);
  Status start_stream();
  Status drop_stream(const Error& error);
  Status handle(const PgoMessage& message, Batch& batch);
  Status on_relation(const PgoRelation& relation, Batch& batch);
  Status emit(Batch& batch, const char* op, const PgoTuple& row, const PgoTuple* old_row, bool key_only);
  Status send_status(bool reply_requested);
  Status send_status_if_due();
  void start_batch(Batch& batch) const;

  nlohmann::json params_;
  std::string what_;
  std::string schema_, table_, qualified_;
  CdcMode mode_;
  std::string slot_, publication_;
  std::vector<std::string> key_;
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
  SKIPPR_TRY(ensure_publication(*sql_));
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
  return check_replica_identity(conn);
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

Status CdcSource::seek(const Position& position) {
  std::optional<CdcPosition> resume;
  if (!position.empty()) {
    auto parsed = CdcPosition::parse(position);
    if (!parsed) return std::unexpected(parsed.error());
    if (parsed->slot != slot_) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the pipeline reads from replication slot {}, not {}; put slot: "
                                                  "{} back, or RESET the pipeline to start again from a snapshot",
                                                  what_, parsed->slot, slot_, parsed->slot));
    }
    resume = *parsed;
  }
  auto confirmed = slot_confirmed_flush();
  if (!confirmed) return std::unexpected(confirmed.error());
  if (resume && !*confirmed) {
    return fail(ErrorKind::kConfig, fmt::format("{}: replication slot {} no longer exists, so the changes since the "
                                                "last run cannot be read; RESET the pipeline to read the table again",
                                                what_, slot_));
  }
  std::optional<std::string> exported;
  uint64_t consistent = confirmed->value_or(0);
  if (!*confirmed) {
    const char* snapshot_action = mode_ == CdcMode::kSnapshotThenCdc ? "export" : "nothing";
    auto created = run_replication_command(*replication_,
                                           fmt::format("CREATE_REPLICATION_SLOT {} LOGICAL pgoutput (SNAPSHOT '{}')",
                                                       pg_quote_identifier(slot_), snapshot_action));
    if (!created) {
      return fail(created.error().kind == ErrorKind::kUnavailable ? ErrorKind::kUnavailable : ErrorKind::kConfig,
                  fmt::format("{}: creating replication slot {} failed: {}", what_, slot_, created.error().message));
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
    SKIPPR_TRY(pg_append_row(batch, columns_, row, what_, qualified_));
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
  const auto deadline = Clock::now() + kMaxPollTime;
  while (result.records.rows < budget.max_rows && pending_bytes_ < budget.max_bytes && Clock::now() < deadline) {
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
    return emit(batch, "insert", insert->row, nullptr, false);
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
      if (key_changed) SKIPPR_TRY(emit(batch, "delete", *old_row, nullptr, true));
    }
    return emit(batch, "update", update->row, old_row, false);
  }
  if (const auto* del = std::get_if<PgoDelete>(&message)) {
    if (del->relid != relid_) return ok();
    return emit(batch, "delete", del->old_row, nullptr, true);
  }
  if (const auto* truncate = std::get_if<PgoTruncate>(&message)) {
    if (relid_ && std::ranges::find(truncate->relids, *relid_) != truncate->relids.end()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: table {} was truncated, which CDC cannot apply row by row; RESET the pipeline to "
                              "read the table again",
                              what_, qualified_));
    }
  }
  return ok();
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
Status CdcSource::emit(Batch& batch, const char* op, const PgoTuple& row, const PgoTuple* old_row, bool key_only) {
  const uint64_t index = tx_index_++;
  if (!in_tx_) return fail(ErrorKind::kCorruption, fmt::format("{}: a change outside a transaction", what_));
  if (pos_.covers(tx_commit_lsn_, index)) return ok();  // delivered before a restart; the server resent it
  std::vector<const PgoValue*> values(columns_.size(), nullptr);
  for (size_t j = 0; j < relation_to_column_.size() && j < row.size(); ++j) {
    const int c = relation_to_column_[j];
    if (key_only && std::ranges::find(key_, columns_[c].name) == key_.end()) continue;
    const PgoValue* v = &row[j];
    if (v->kind == PgoValue::Kind::kUnchangedToast) {
      // Unchanged large values are not resent; with REPLICA IDENTITY FULL the old row carries them.
      if (!old_row || j >= old_row->size() || (*old_row)[j].kind == PgoValue::Kind::kUnchangedToast) {
        return fail(ErrorKind::kConfig,
                    fmt::format("{}: an update of table {} left the large (TOASTed) value of column {} out of the "
                                "stream; run ALTER TABLE {} REPLICA IDENTITY FULL so updates carry it",
                                what_, qualified_, pg_quote_identifier(columns_[c].name), qualified_));
      }
      v = &(*old_row)[j];
    }
    values[c] = v;
  }
  for (size_t c = 0; c < columns_.size(); ++c) {
    Column& column = batch.columns[static_cast<size_t>(batch.schema.index_of(columns_[c].name))];
    std::optional<std::string> text;
    if (values[c] && values[c]->kind == PgoValue::Kind::kText) text = values[c]->text;
    if (auto st = pg_append_output_text(column, columns_[c], text); !st) {
      return fail(ErrorKind::kBadInput,
                  fmt::format("{}: column {} of {}: {}", what_, pg_quote_identifier(columns_[c].name), qualified_,
                              st.error().message));
    }
    pending_bytes_ += text ? text->size() : 1;
  }
  batch.columns[static_cast<size_t>(batch.schema.index_of(kOpField))].append_string(op);
  batch.columns[static_cast<size_t>(batch.schema.index_of(kOrderField))].append_string(
      cdc_order_token(tx_commit_lsn_, index + 1));
  batch.rows += 1;
  pos_.lsn = tx_commit_lsn_;
  pos_.index = index + 1;
  pos_.tx_done = false;
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

std::string cdc_default_name(std::string_view pipeline) {
  std::string name = "skippr_";
  for (char c : pipeline) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name.push_back((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ? lower : '_');
  }
  return name.substr(0, 63);  // NAMEDATALEN - 1
}

Result<std::unique_ptr<Source>> make_cdc_source(const ConnectorContext& ctx, const std::string& schema,
                                                const std::string& table, CdcMode mode) {
  auto param = [&](const char* name) {
    return ctx.params.contains(name) && ctx.params[name].is_string() ? ctx.params[name].get<std::string>()
                                                                     : cdc_default_name(ctx.pipeline);
  };
  const std::string slot = param("slot"), publication = param("publication");
  const bool valid_slot = !slot.empty() && slot.size() <= 63 && std::ranges::all_of(slot, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!valid_slot) {
    return fail(ErrorKind::kConfig, fmt::format("source '{}': slot '{}' is not a valid replication slot name (use "
                                                "lowercase letters, digits and _, at most 63)",
                                                ctx.name, slot));
  }
  return std::make_unique<CdcSource>(ctx, schema, table, mode, slot, publication);
}

}  // namespace skippr
