// The Postgres CDC source itself: construction and the factory, open, seek (the slot, the snapshot to begin), the
// poll of the snapshot and of the replication stream (decoding pgoutput into pending rows), and acknowledge with the
// standby status it sends. The catalog and slot checks are in cdc_checks.cc, the fetch of unchanged TOASTed values in
// cdc_toast_fetch.cc; the class is declared in cdc_source_internal.h.
#include "sources/postgres/cdc_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "clients/postgres/pg_client.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/cdc_source_internal.h"
#include "sources/postgres/pg_table_reader.h"
#include "sources/postgres/pgoutput.h"
#include "sources/postgres/replication_stream.h"

namespace skippr {
namespace cdc_detail {
namespace {

constexpr const char* kTruncateOp = "truncate";  // see emit_truncate and append_snapshot_end
constexpr size_t kEstimatedRowBytes = 200;       // only sizes the LIMIT of a snapshot page
constexpr size_t kMaxRowsPerPage = 50000;
constexpr int kIdleWaitMs = 100;                                    // how long a poll waits for the next message
constexpr auto kMaxPollTime = std::chrono::milliseconds(500);       // so the engine can cut batches by time
constexpr auto kMaxPollOvertime = std::chrono::milliseconds(2000);  // to finish the transaction being read
constexpr auto kHeartbeat = std::chrono::seconds(10);               // well inside the server's wal_sender_timeout
constexpr uint64_t kLongPageHeaderBytes = 40;                       // SizeOfXLogLongPHD: the largest WAL page header
constexpr auto kReplyRequestEvery = std::chrono::milliseconds(200);
// How often the server's end of WAL is asked for (Poll::backlog): a query on the SQL connection, not per poll.
constexpr auto kWalEndAskEvery = std::chrono::seconds(1);
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

}  // namespace

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
  batch.add_column({std::string(kOpField), Type::kString});
  batch.add_column({std::string(kOrderField), Type::kString});
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
  // Past the deadline a transaction being read is read on to its commit, so the poll can end on a transaction
  // boundary; for at most kMaxPollOvertime, since changes of other tables and resent ones count in no budget.
  bool stream_broke = false;
  while (pending_.size() < budget.max_rows && pending_bytes_ < budget.max_bytes &&
         (Clock::now() < deadline || (in_tx_ && Clock::now() < deadline + kMaxPollOvertime))) {
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
      stream_broke = true;
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
          stream_broke = true;
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
    const size_t rows_before = pending_.size();
    SKIPPR_TRY(handle(*message, result.records));
    if (pending_.size() > rows_before && !result.oldest_record_time_micros) {
      result.oldest_record_time_micros = tx_commit_time_;
    }
  }
  // A poll that used up its time window and ends on a transaction boundary, with the catch-up point passed, counts as
  // drained although changes keep coming: under a steady write load there is never an idle moment, and the batch
  // would otherwise wait for BUFFER_THRESHOLD_SECONDS (60 s by default) before landing. So a batch is cut about every
  // kMaxPollTime and the lag from a source commit to landing stays near it (bench/cdc_lag.sh).
  if (!stream_broke && Clock::now() >= deadline && caught_up_ && !in_tx_) result.drained = true;
  SKIPPR_TRY(flush_pending(result));
  result.position_after = pos_.to_position();
  // WAL the server has written past what this position covers. It also grows while only tables outside the
  // publication are written (the slot holds that WAL too until a change of ours moves the position).
  if (auto end = server_wal_end()) {
    const uint64_t covered = pos_.confirmable_lsn();
    result.backlog = *end > covered ? *end - covered : 0;
  }
  return result;
}

std::optional<uint64_t> CdcSource::server_wal_end() {
  // The stream cannot tell it: a keepalive carries how far the walsender has decoded and sent, which stays just
  // ahead of this position exactly when changes back up. Asked at most every kWalEndAskEvery; a failed query only
  // leaves the figure out (the stream is what matters).
  if (server_wal_end_ && Clock::now() - wal_end_asked_at_ < kWalEndAskEvery) return server_wal_end_;
  wal_end_asked_at_ = Clock::now();
  server_wal_end_.reset();
  if (!sql_) return std::nullopt;
  auto lsn = sql_->query("SELECT pg_current_wal_lsn()::text");
  if (!lsn || lsn->rows.empty()) return std::nullopt;
  server_wal_end_ = parse_lsn(lsn->rows.at(0).at(0).value_or(""));
  return server_wal_end_;
}

Status CdcSource::handle(const PgoMessage& message, Batch& batch) {
  if (const auto* begin = std::get_if<PgoBegin>(&message)) {
    in_tx_ = true;
    tx_commit_lsn_ = begin->final_lsn;
    tx_commit_time_ = begin->commit_time + kPgEpochUnixMicros;
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

}  // namespace cdc_detail

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
  cdc_detail::CdcNames names{param("slot"), param("publication"), given("slot"), given("publication")};
  const std::string& slot = names.slot;
  const bool valid_slot = !slot.empty() && slot.size() <= 63 && std::ranges::all_of(slot, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!valid_slot) {
    return fail(ErrorKind::kConfig, fmt::format("source '{}': slot '{}' is not a valid replication slot name (use "
                                                "lowercase letters, digits and _, at most 63)",
                                                ctx.name, slot));
  }
  auto options = cdc_detail::cdc_options(ctx);
  if (!options) return std::unexpected(options.error());
  return std::make_unique<cdc_detail::CdcSource>(ctx, schema, table, mode, std::move(names), *options);
}

}  // namespace skippr
