// The Postgres CDC source itself: construction and the factory, open, seek (the slot, the snapshot to begin), the
// poll of the snapshot and of the replication stream (decoding pgoutput into pending rows), and acknowledge with the
// standby status it sends. The catalog and slot checks are in cdc_checks.cc, the fetch of unchanged TOASTed values in
// cdc_toast_fetch.cc; the class is declared in cdc_source_internal.h.
#include "sources/postgres/cdc_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <ranges>
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

constexpr size_t kEstimatedRowBytes = 200;  // only sizes the LIMIT of a snapshot page
constexpr size_t kMaxRowsPerPage = 50000;
constexpr int kIdleWaitMs = 100;                               // how long a poll waits for the next message
constexpr auto kMaxPollTime = std::chrono::milliseconds(500);  // so the engine can cut batches by time
constexpr auto kMaxPollOvertime = std::chrono::seconds(30);    // to finish the transaction being read
constexpr size_t kMaxTransactionBudgets = 4;  // how far past its budget a poll reads on to a transaction's commit
constexpr auto kHeartbeat = std::chrono::seconds(10);  // well inside the server's wal_sender_timeout
constexpr uint64_t kLongPageHeaderBytes = 40;          // SizeOfXLogLongPHD: the largest WAL page header
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

bool CdcTable::is_key(const std::string& column) const { return std::ranges::find(key, column) != key.end(); }

size_t CdcTable::column_index(const std::string& column) const {
  return static_cast<size_t>(std::ranges::find_if(columns, [&](const PgSourceColumn& c) { return c.name == column; }) -
                             columns.begin());
}

Status CdcSource::open() {
  auto conn = PgConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  sql_.emplace(std::move(*conn));
  SKIPPR_TRY(sql_->execute(kSessionSettings));
  SKIPPR_TRY(check_server(*sql_));
  auto selected = per_table_ ? select_tables(*sql_, selection_, what_)
                             : Result<std::vector<SelectedTable>>(std::vector{selection_.single()});
  if (!selected) return std::unexpected(selected.error());
  tables_.clear();
  for (auto& s : *selected) {
    CdcTable table;
    table.schema = std::move(s.schema);
    table.name = std::move(s.table);
    table.qualified = pg_qualified(table.schema, table.name);
    if (per_table_) table.stream = std::move(s.stream);
    table.key = pipeline_key_;  // empty with several tables: each table's primary key
    SKIPPR_TRY(check_table(*sql_, table));
    tables_.push_back(std::move(table));
  }
  if (per_table_) {
    spdlog::info("{}: {} table{} through slot {}: {}", what_, tables_.size(), tables_.size() == 1 ? "" : "s", slot_,
                 fmt::join(tables_ | std::views::transform(&CdcTable::qualified), ", "));
  }
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
    if (parsed->per_table != per_table_) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: the pipeline's position was written for {}, and `tables` now names {}; put "
                              "`tables` back, or RESET PIPELINE {} to read the tables again from a snapshot",
                              what_, parsed->per_table ? "several tables" : "one table", per_table_ ? "several" : "one",
                              pipeline_));
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
  } else {
    pos_ = CdcPosition::stream_from(slot_, consistent);
    pos_.per_table = per_table_;
    if (mode_ == CdcMode::kSnapshotThenCdc) {
      pos_.snapshot = true;
      pos_.lsn = 0;
      pos_.consistent_lsn = consistent;
    }
  }
  SKIPPR_TRY(reconcile_tables(/*fresh_position=*/!resume));
  if (pos_.snapshot) return begin_snapshot(exported);
  return ok();
}

// A many-table position's tables against the selection. A table new to the pipeline is read with the others in the
// snapshot phase; in the stream phase it gets a snapshot of its own (begun by the next poll), or none for cdc_only (its
// changes stream from now on). A table asked for by RESYNC STREAM gets a snapshot of its own again. A table no longer
// selected is forgotten: its changes are left out from now on.
Status CdcSource::reconcile_tables(bool fresh_position) {
  if (!per_table_) return ok();
  std::map<std::string, CdcTableProgress> tables;
  for (const auto& table : tables_) {
    const auto asked = resync_requests_.find(table.stream);
    const uint64_t requests = asked == resync_requests_.end() ? 0 : asked->second;
    auto found = pos_.tables.find(table.stream);
    if (found != pos_.tables.end() && found->second.resync >= requests) {
      tables.emplace(table.stream, found->second);
      continue;
    }
    CdcTableProgress fresh;
    fresh.resync = requests;  // a fresh position reads everything anyway: no request is left to answer
    fresh.done = mode_ == CdcMode::kCdcOnly && found == pos_.tables.end();
    if (!fresh_position && !pos_.snapshot) {
      spdlog::info("{}: table {} {}", what_, table.qualified,
                   found != pos_.tables.end() ? fmt::format("is read again from a snapshot of its own (RESYNC "
                                                            "request {})",
                                                            requests)
                   : fresh.done               ? std::string("is new to the pipeline; its changes stream from now on")
                                              : std::string("is new to the pipeline; it is read from a snapshot of its "
                                                                          "own first"));
    }
    if (found != pos_.tables.end() && pos_.snapshot) fresh.after.clear();  // read again in this snapshot
    tables.emplace(table.stream, std::move(fresh));
  }
  for (const auto& [stream, progress] : pos_.tables) {
    if (!tables.contains(stream)) {
      spdlog::info("{}: stream {} is no longer in `tables`; its changes are left out from now on", what_, stream);
    }
  }
  for (const auto& [stream, requests] : resync_requests_) {
    if (!tables.contains(stream)) {
      spdlog::warn("{}: RESYNC STREAM {} names no table this source reads; it is ignored", what_, stream);
    }
  }
  pos_.tables = std::move(tables);
  return ok();
}

// The tables are read in key order inside one REPEATABLE READ transaction. With the slot's exported snapshot it holds
// exactly the rows committed before the consistent point, and the stream brings everything after. When a run was
// killed mid-snapshot the export is gone: the rest is read (after the last key committed) from a fresh, later
// snapshot while the stream still starts at the consistent point. Rows then may show changes the stream replays
// too; with merge_by_key that converges, because every streamed change outranks the snapshot rows' token
// (consistent point << 32) and is applied after them, and a row deleted before the fresh snapshot is absent from it
// and deleted again by its streamed delete.
Status CdcSource::begin_snapshot(const std::optional<std::string>& exported) {
  auto conn = PgConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  snapshot_.emplace(std::move(*conn));
  SKIPPR_TRY(snapshot_->execute(kSessionSettings));
  SKIPPR_TRY(snapshot_->execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  if (exported) {
    SKIPPR_TRY(snapshot_->execute(fmt::format("SET TRANSACTION SNAPSHOT {}", pg_quote_literal(*exported))));
  }
  for (const auto& table : tables_) {
    if (!table.key_backed) SKIPPR_TRY(check_no_duplicate_keys(*snapshot_, table));  // only primary_key_unique
  }
  return ok();
}

// A table added to a streaming pipeline (or read again on purpose) gets a consistent snapshot of its own: a
// temporary slot's creation waits for a point where every transaction before it is in its exported snapshot and
// every one after it is decoded, the same guarantee the pipeline's slot gave the first snapshot. The pipeline's
// stream skips the table's changes committed before that point (the snapshot holds them) and passes the later ones,
// which outrank the snapshot rows. The temporary slot goes when its connection closes, once the snapshot is imported.
Status CdcSource::begin_table_snapshot(size_t t) {
  CdcTable& table = tables_[t];
  auto repl = PgConnection::connect(params_, what_, /*replication=*/true);
  if (!repl) return std::unexpected(repl.error());
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::string temporary = fmt::format("{}_{:08x}", slot_.substr(0, 54), static_cast<uint32_t>(micros));
  auto created = run_replication_command(
      *repl, fmt::format("CREATE_REPLICATION_SLOT {} TEMPORARY LOGICAL pgoutput (SNAPSHOT 'export')",
                         pg_quote_identifier(temporary)));
  if (!created) {
    return fail(
        created.error().kind == ErrorKind::kUnavailable ? ErrorKind::kUnavailable : ErrorKind::kConfig,
        fmt::format("{}: a temporary replication slot for the snapshot of table {} could not be created: "
                    "{}{}",
                    what_, table.qualified, created.error().message,
                    created.error().message.find("replication slots") != std::string::npos ? kSlotsFullHint : ""));
  }
  const uint64_t since = parse_lsn(created->rows.at(0).at(1).value_or("")).value_or(0);
  auto conn = PgConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  SKIPPR_TRY(conn->execute(kSessionSettings));
  SKIPPR_TRY(conn->execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  SKIPPR_TRY(conn->execute(
      fmt::format("SET TRANSACTION SNAPSHOT {}", pg_quote_literal(created->rows.at(0).at(2).value_or("")))));
  if (!table.key_backed) SKIPPR_TRY(check_no_duplicate_keys(*conn, table));
  table.snapshot.emplace(std::move(*conn));
  CdcTableProgress& p = progress(t);
  p.done = false;
  p.after.clear();
  p.since = since;
  spdlog::info("{}: reading table {} from a snapshot as of {} while the other tables stream", what_, table.qualified,
               format_lsn(since));
  return ok();
}

void CdcSource::start_batch(Batch& batch, const CdcTable& table) const {
  batch.stream = table.stream;
  if (per_table_) batch.key = table.key;
  for (const auto& c : table.columns) batch.add_column({c.name, c.type});
  add_change_fields(batch);
}

Batch& CdcSource::part_of(Poll& result, size_t t) const {
  const CdcTable& table = tables_[t];
  auto is_part = [&](const Batch& b) { return !b.columns.empty() && b.stream == table.stream; };
  if (is_part(result.records)) return result.records;
  for (auto& other : result.other_streams) {
    if (is_part(other)) return other;
  }
  Batch& part = result.records.columns.empty() ? result.records : result.other_streams.emplace_back();
  start_batch(part, table);
  return part;
}

Result<Poll> CdcSource::poll(const Budget& budget) {
  if (pos_.snapshot) return poll_snapshot(budget);
  return poll_stream(budget);
}

Result<bool> CdcSource::read_snapshot_page(PgConnection& conn, size_t t, std::vector<std::string>& after,
                                           uint64_t since, size_t limit, Poll& result) {
  const CdcTable& table = tables_[t];
  std::vector<std::optional<std::string>> params(after.begin(), after.end());
  auto rows =
      conn.query(pg_keyset_select_sql(table.qualified, table.columns, table.key, !after.empty(), limit), params);
  if (!rows) {
    return fail(rows.error().kind == ErrorKind::kConfig ? ErrorKind::kConfig : ErrorKind::kUnavailable,
                fmt::format("{}: reading {}: {}", what_, table.qualified, rows.error().message));
  }
  Batch& batch = part_of(result, t);
  const std::string token = change_order_token(since, 0);
  const size_t op = static_cast<size_t>(batch.schema.index_of(kOpField));
  const size_t order = static_cast<size_t>(batch.schema.index_of(kOrderField));
  const size_t dead_before = result.dead_letters.size();
  for (const auto& row : rows->rows) {
    SKIPPR_TRY(pg_append_row(batch, table.columns, row, what_, table.qualified, result.dead_letters));
    batch.columns[op].append_string("insert");
    batch.columns[order].append_string(token);
    batch.rows += 1;
  }
  // Counted under this table's stream (the poll may hold others: a table snapshotted while the rest stream).
  for (size_t i = dead_before; i < result.dead_letters.size(); ++i) result.dead_letters[i].stream = batch.stream;
  if (!rows->rows.empty()) {
    const auto& last = rows->rows.back();
    after.clear();
    for (size_t i = 0; i < table.key.size(); ++i) after.push_back(last[table.columns.size() + i].value_or(""));
  }
  const bool finished = rows->rows.size() < limit;
  if (finished && options_.merge) append_truncate_row(batch, change_order_token(since, 0));
  return finished;
}

Result<Poll> CdcSource::poll_snapshot(const Budget& budget) {
  Poll result;
  const size_t limit =
      std::clamp<size_t>(std::min(budget.max_rows, budget.max_bytes / kEstimatedRowBytes), 1, kMaxRowsPerPage);
  bool all_read = true;
  if (!per_table_) {
    auto finished = read_snapshot_page(*snapshot_, 0, pos_.after, pos_.consistent_lsn, limit, result);
    if (!finished) return std::unexpected(finished.error());
    all_read = *finished;
  } else {
    // One table per poll, in order; each is its own stream.
    for (size_t t = 0; t < tables_.size(); ++t) {
      CdcTableProgress& p = progress(t);
      if (p.done) continue;
      auto finished = read_snapshot_page(*snapshot_, t, p.after, pos_.consistent_lsn, limit, result);
      if (!finished) return std::unexpected(finished.error());
      if (*finished) {
        p.done = true;
        p.after.clear();
      }
      all_read = std::ranges::all_of(tables_, [&](const CdcTable& table) { return pos_.tables[table.stream].done; });
      break;
    }
  }
  if (all_read) {  // every table is read: stream from the consistent point on
    SKIPPR_TRY(snapshot_->execute("COMMIT"));
    snapshot_.reset();
    pos_ = pos_.streaming_from(pos_.consistent_lsn);
  }
  result.position_after = pos_.to_position();
  return result;
}

Status CdcSource::poll_table_snapshot(const Budget& budget, Poll& result) {
  if (!per_table_) return ok();
  for (size_t t = 0; t < tables_.size(); ++t) {
    if (progress(t).done) continue;
    CdcTable& table = tables_[t];
    if (progress(t).since == 0) {
      SKIPPR_TRY(begin_table_snapshot(t));
    } else if (!table.snapshot) {
      // A run stopped while the table's snapshot was read: the rest comes from a fresh snapshot, as for the first
      // snapshot (see begin_snapshot), with the token of the first.
      auto conn = PgConnection::connect(params_, what_);
      if (!conn) return std::unexpected(conn.error());
      SKIPPR_TRY(conn->execute(kSessionSettings));
      SKIPPR_TRY(conn->execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
      table.snapshot.emplace(std::move(*conn));
    }
    CdcTableProgress& p = progress(t);
    const size_t limit =
        std::clamp<size_t>(std::min(budget.max_rows, budget.max_bytes / kEstimatedRowBytes) / 2, 1, kMaxRowsPerPage);
    auto finished = read_snapshot_page(*table.snapshot, t, p.after, p.since, limit, result);
    if (!finished) return std::unexpected(finished.error());
    if (*finished) {
      p.done = true;
      p.after.clear();
      (void)table.snapshot->execute("COMMIT");
      table.snapshot.reset();
      spdlog::info("{}: table {} is read; its changes stream with the others", what_, table.qualified);
    }
    return ok();  // one table at a time
  }
  return ok();
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

// A stream that breaks inside a transaction: its changes read so far are dropped and the position goes back to where
// the transaction began, so the poll ends on a transaction boundary and the transaction comes again whole.
void CdcSource::forget_open_transaction() {
  if (!in_tx_) return;
  pending_.resize(tx_start_.pending_rows);
  pending_bytes_ = tx_start_.pending_bytes;
  pos_ = tx_start_.position;
}

Result<Poll> CdcSource::poll_stream(const Budget& budget) {
  if (!stream_) SKIPPR_TRY(start_stream());
  Poll result;
  if (!per_table_) start_batch(result.records, tables_.front());
  pending_bytes_ = 0;
  pending_.clear();
  SKIPPR_TRY(poll_table_snapshot(budget, result));
  const auto deadline = Clock::now() + kMaxPollTime;
  // A poll ends on a transaction boundary, so one source transaction is never split over two WAL batches (a
  // destination shows all of it or none): past the budget or the deadline, the transaction being read is read on
  // to its commit. Only a transaction beyond kMaxTransactionBudgets budgets, or one still open kMaxPollOvertime past
  // the deadline, is split (with a warning), so memory stays bounded by the budget.
  // Four whole batches, not four of what the batch being built still has room for (that shrinks to a byte as it
  // fills, and would split ordinary transactions right after a restart, when the backlog fills every batch).
  const size_t max_tx_rows = budget.max_rows * kMaxTransactionBudgets;
  const size_t max_tx_bytes = std::max(budget.max_bytes, budget.batch_bytes) * kMaxTransactionBudgets;
  bool stream_broke = false;
  while (true) {
    const auto now = Clock::now();
    const bool full = pending_.size() >= budget.max_rows || pending_bytes_ >= budget.max_bytes;
    if (!in_tx_ && (full || now >= deadline)) break;
    if (in_tx_ &&
        (pending_.size() >= max_tx_rows || pending_bytes_ >= max_tx_bytes || now >= deadline + kMaxPollOvertime)) {
      spdlog::warn(
          "{}: the transaction committed at {} is larger than {} budgets of a batch (or slower than {} s to "
          "read); it is split over several WAL batches, so a destination may show part of it for a while",
          what_, format_lsn(tx_commit_lsn_), kMaxTransactionBudgets,
          std::chrono::duration_cast<std::chrono::seconds>(kMaxPollOvertime).count());
      break;
    }
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
    if (!frame) {  // the whole transactions so far stand with their position; the next poll restarts after it
      forget_open_transaction();
      SKIPPR_TRY(drop_stream(frame.error()));
      stream_broke = true;
      break;
    }
    if (!*frame) {  // nothing more right now
      result.drained = caught_up_ && !in_tx_;
      if (!in_tx_) break;
      continue;
    }
    if ((*frame)->kind == ReplicationFrame::Kind::kKeepalive) {
      if ((*frame)->reply_requested) {
        if (auto st = send_status(false); !st) {
          forget_open_transaction();
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
    SKIPPR_TRY(handle(*message));
    if (pending_.size() > rows_before && !result.oldest_record_time_micros) {
      result.oldest_record_time_micros = tx_commit_time_;
    }
  }
  // A poll that used up its time window and ends on a transaction boundary, with the catch-up point passed, counts as
  // drained although changes keep coming: under a steady write load there is never an idle moment, and the batch
  // would otherwise wait for BUFFER_THRESHOLD_SECONDS (60 s by default) before landing. So a batch is cut about every
  // kMaxPollTime and the lag from a source commit to landing stays near it (bench/cdc_lag.sh).
  if (!stream_broke && Clock::now() >= deadline && caught_up_ && !in_tx_) result.drained = true;
  // A table still being read from its snapshot keeps a --once run going.
  if (per_table_ && std::ranges::any_of(pos_.tables, [](const auto& entry) { return !entry.second.done; })) {
    result.drained = false;
  }
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

std::optional<size_t> CdcSource::table_of(uint32_t relid) const {
  const auto found = relids_.find(relid);
  if (found == relids_.end()) return std::nullopt;
  if (per_table_) {
    const auto p = pos_.tables.find(tables_[found->second].stream);
    if (p == pos_.tables.end()) return std::nullopt;
    // A table waiting for its snapshot gets every change committed before it from there; one being read from a
    // snapshot as of `since` has the changes committed before that point in it.
    if (!p->second.done && p->second.since == 0) return std::nullopt;
    if (tx_commit_lsn_ < p->second.since) return std::nullopt;
  }
  return found->second;
}

// Each change of the stream is one event of its transaction, whichever table it is of (an update with an old tuple
// is two, see below): the position says how many of a transaction's events are delivered, and the order token of a
// change is its event's.
Status CdcSource::handle(const PgoMessage& message) {
  if (const auto* begin = std::get_if<PgoBegin>(&message)) {
    in_tx_ = true;
    tx_start_ = {pending_.size(), pending_bytes_, pos_};
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
  if (const auto* relation = std::get_if<PgoRelation>(&message)) return on_relation(*relation);
  const bool change = std::holds_alternative<PgoInsert>(message) || std::holds_alternative<PgoUpdate>(message) ||
                      std::holds_alternative<PgoDelete>(message) || std::holds_alternative<PgoTruncate>(message);
  if (!change) return ok();
  if (!in_tx_) return fail(ErrorKind::kCorruption, fmt::format("{}: a change outside a transaction", what_));
  // The next event of the transaction: its order token, or nullopt when the position already covers it (delivered
  // before a restart; the server resent it).
  auto event = [&]() -> std::optional<std::string> {
    const uint64_t index = tx_index_++;
    if (pos_.covers(tx_commit_lsn_, index)) return std::nullopt;
    pos_.lsn = tx_commit_lsn_;
    pos_.index = index + 1;
    pos_.tx_done = false;
    return change_order_token(tx_commit_lsn_, index + 1);
  };
  if (const auto* insert = std::get_if<PgoInsert>(&message)) {
    const auto t = table_of(insert->relid);
    const auto token = event();
    if (!t || !token) return ok();
    return emit(*t, "insert", *token, insert->row, nullptr, false);
  }
  if (const auto* update = std::get_if<PgoUpdate>(&message)) {
    // An update with an old tuple (an old key: the replica identity changed; or REPLICA IDENTITY FULL's whole old
    // row) is two events, the first for the delete of an old key; one without is one. That depends on the message
    // alone, not on which tables are read or re-synced, so a position inside a transaction means the same events
    // to every run.
    const PgoTuple* old_row = update->old_kind ? &update->old_row : nullptr;
    const auto delete_token = old_row ? event() : std::nullopt;
    const auto t = table_of(update->relid);
    if (!t) {
      (void)event();
      return ok();
    }
    const CdcTable& table = tables_[*t];
    if (old_row) {
      // The key changed when an old key differs from the new row's: delete the old key, then upsert the new one.
      bool key_changed = false;
      for (size_t j = 0; j < table.relation_to_column.size() && j < old_row->size(); ++j) {
        const int c = table.relation_to_column[j];
        if (c < 0 || !table.is_key(table.columns[c].name)) continue;
        const PgoValue& before = (*old_row)[j];
        const PgoValue& after = update->row.at(j);
        if (after.kind != PgoValue::Kind::kUnchangedToast && (before.kind != after.kind || before.text != after.text)) {
          key_changed = true;
        }
      }
      if (key_changed && delete_token) SKIPPR_TRY(emit(*t, "delete", *delete_token, *old_row, nullptr, true));
    }
    // Only a whole old row (REPLICA IDENTITY FULL) holds the unchanged values; an old key ('K') has NULL elsewhere.
    const auto token = event();
    if (!token) return ok();
    return emit(*t, "update", *token, update->row, update->old_kind == 'O' ? &update->old_row : nullptr, false);
  }
  if (const auto* del = std::get_if<PgoDelete>(&message)) {
    const auto t = table_of(del->relid);
    const auto token = event();
    if (!t || !token) return ok();
    return emit(*t, "delete", *token, del->old_row, nullptr, true);
  }
  const auto& truncate = std::get<PgoTruncate>(message);
  const auto token = event();
  if (!token) return ok();
  for (uint32_t relid : truncate.relids) {
    if (const auto t = table_of(relid)) SKIPPR_TRY(on_truncate(*t, *token));
  }
  return ok();
}

// A TRUNCATE has no rows to stream. It is still in the slot after a RESET (the slot stays), so the message names
// ways forward that get past it.
Status CdcSource::on_truncate(size_t t, const std::string& token) {
  const CdcTable& table = tables_[t];
  if (options_.on_truncate == CdcOptions::OnTruncate::kApply) {
    // A change of its own: _skippr_op = truncate, every column NULL. A merging sink deletes every row older than
    // its order token.
    pending_.push_back(
        PendingRow{t, kTruncateOp.data(), token, std::vector<PendingValue>(table.columns.size()), false, false});
    return ok();
  }
  if (options_.on_truncate == CdcOptions::OnTruncate::kIgnore) {
    spdlog::warn(
        "{}: table {} was truncated (commit {}); on_truncate: ignore leaves the rows it removed in the "
        "destination",
        what_, table.qualified, format_lsn(tx_commit_lsn_));
    return ok();
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{}: table {} was truncated (commit {}), and on_truncate is stop. To go on, either set "
                          "on_truncate: apply (the destination's rows are removed too) or ignore on the source and "
                          "run again (the destination keeps the rows the "
                          "truncate removed: delete them there), or read the table afresh: drop the slot (SELECT "
                          "pg_drop_replication_slot('{}')), then RESET PIPELINE {} and run again",
                          what_, table.qualified, format_lsn(tx_commit_lsn_), slot_, pipeline_));
}

// The end of a snapshot into merge_by_key: a truncate with the snapshot rows' own order token, so the destination
// drops every row older than the snapshot that the snapshot did not read again (rows deleted while a dropped slot
// or a RESET lost their deletes, rows a TRUNCATE removed). The snapshot's rows carry the same token and stay; every
// change streamed later outranks it.
Status CdcSource::on_relation(const PgoRelation& relation) {
  const auto found = std::ranges::find_if(
      tables_, [&](const CdcTable& t) { return t.schema == relation.schema && t.name == relation.name; });
  if (found == tables_.end()) {
    relids_.erase(relation.relid);
    return ok();
  }
  CdcTable& table = *found;
  relids_[relation.relid] = static_cast<size_t>(found - tables_.begin());
  table.relation_to_column.clear();
  for (const auto& rc : relation.columns) {
    auto it = std::ranges::find_if(table.columns, [&](const PgSourceColumn& c) { return c.name == rc.name; });
    if (it == table.columns.end()) {  // added since open(): a new nullable column downstream (additive evolution)
      PgSourceColumn added{rc.name, type_name_for_oid(rc.type_oid), Type::kString};
      added.type = pg_source_type(added.pg_type);
      table.columns.push_back(added);
      it = table.columns.end() - 1;
    }
    table.relation_to_column.push_back(static_cast<int>(it - table.columns.begin()));
  }
  return ok();
}

// One change of a table, as a row: the tuple's columns (only the key for a delete), the op and the order token.
// It waits in pending_ until the poll ends, so the unchanged TOASTed values of all its rows are fetched at once.
Status CdcSource::emit(size_t t, const char* op, const std::string& token, const PgoTuple& row,
                       const PgoTuple* full_old_row, bool key_only) {
  const CdcTable& table = tables_[t];
  PendingRow pending{t, op, token, std::vector<PendingValue>(table.columns.size())};
  for (size_t j = 0; j < table.relation_to_column.size() && j < row.size(); ++j) {
    const int c = table.relation_to_column[j];
    const bool is_key = table.is_key(table.columns[c].name);
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
                                what_, table.qualified, pg_quote_identifier(table.columns[c].name), table.qualified));
      }
      value.from = PendingValue::From::kToFetch;
      pending.to_fetch = true;
      continue;
    }
    if (v->kind == PgoValue::Kind::kText) value.text = v->text;
    pending_bytes_ += value.text ? value.text->size() : 1;
  }
  pending_.push_back(std::move(pending));
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

Result<std::unique_ptr<Source>> make_cdc_source(const ConnectorContext& ctx, TableSelection selection, CdcMode mode) {
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
  return std::make_unique<cdc_detail::CdcSource>(ctx, std::move(selection), mode, std::move(names), *options);
}

}  // namespace skippr
