// Private to the Postgres CDC source: the class CdcSource and the types and constants its pieces share. The class
// is defined across cdc_source.cc (open, seek, poll, the snapshot and the stream, acknowledge), cdc_checks.cc (the
// catalog and replication slot checks) and cdc_toast_fetch.cc (reading unchanged TOASTed values by key), so it lives
// in the named namespace skippr::cdc_detail rather than in one file's anonymous namespace. Not for use elsewhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "clients/postgres/pg_client.h"
#include "core/change_fields.h"
#include "core/connector.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/cdc_source.h"
#include "sources/postgres/pg_table_reader.h"
#include "sources/postgres/pgoutput.h"
#include "sources/postgres/replication_stream.h"
#include "sources/postgres/table_selection.h"

namespace skippr::cdc_detail {

using Clock = std::chrono::steady_clock;

// One value of a streamed change before it is appended: the stream's text (output form), a value fetched from the
// table (the snapshot's select-expression form), or one still to fetch (an unchanged TOASTed value the stream left
// out). nullopt text is NULL.
struct PendingValue {
  enum class From : char { kStream, kTable, kToFetch };
  From from = From::kStream;
  std::optional<std::string> text;
};
struct PendingRow {
  size_t table = 0;  // index in CdcSource::tables_
  const char* op = "";
  std::string token;
  std::vector<PendingValue> values;  // by index in the table's columns (a column added later is NULL here)
  bool to_fetch = false;             // some value is kToFetch
  bool gone = false;                 // fetched, but the key is no longer in the table: dropped (see fetch)
};

// One table the source reads: its catalog facts, its relation in the stream, and its snapshot while one is read.
struct CdcTable {
  std::string schema, name, qualified;
  std::string stream;  // the stream it is (empty: the one table of a one-table source)
  std::vector<std::string> key;
  bool key_backed = false;  // a primary key or unique index proves key unique
  std::vector<PgSourceColumn> columns;
  // The table's relation in the stream: per relation column, the index in columns (-1: not read).
  std::vector<int> relation_to_column;
  // A snapshot of this table read while the stream goes on (added or re-synced), on a connection of its own.
  std::optional<PgConnection> snapshot;

  bool is_key(const std::string& column) const;
  size_t column_index(const std::string& column) const;  // of a column that exists
};

// The slot and publication, and whether skippr.yml named them (a default name may give way to a position's).
struct CdcNames {
  std::string slot, publication;
  bool slot_given = false, publication_given = false;
};

// What the source parameters say beyond the connection and the tables.
struct CdcOptions {
  bool primary_key_unique = false;  // the user vouches that primary_key is unique: checked in the snapshot
  enum class OnTruncate { kApply, kStop, kIgnore };
  OnTruncate on_truncate = OnTruncate::kApply;
  bool merge = false;  // landing: merge_by_key (a finished snapshot then also removes what it did not read)
};

class CdcSource final : public Source {
 public:
  CdcSource(const ConnectorContext& ctx, TableSelection selection, CdcMode mode, CdcNames names, CdcOptions options)
      : params_(ctx.params),
        what_(fmt::format("source '{}'", ctx.name)),
        name_(ctx.name),
        pipeline_(ctx.pipeline),
        selection_(std::move(selection)),
        per_table_(selection_.names_streams()),
        mode_(mode),
        slot_(std::move(names.slot)),
        publication_(std::move(names.publication)),
        slot_given_(names.slot_given),
        publication_given_(names.publication_given),
        options_(options),
        pipeline_key_(ctx.primary_key) {}

  ~CdcSource() override {
    // The reader thread has stopped: confirm what the last commits acknowledged (a kill skips this; harmless).
    if (stream_) (void)send_status(/*reply_requested=*/false);
  }

  Status open() override;
  Status seek(const Position& position) override;
  Result<Poll> poll(const Budget& budget) override;
  Status acknowledge(const Position& position) override;
  bool streaming() const override { return true; }
  bool names_streams() const override { return per_table_; }
  void request_resyncs(const std::map<std::string, uint64_t>& requests) override { resync_requests_ = requests; }

 private:
  Status check_server(PgConnection& conn);
  Status check_table(PgConnection& conn, CdcTable& table);
  Status check_replica_identity(PgConnection& conn, const CdcTable& table);
  Status check_key_unique(PgConnection& conn, CdcTable& table);
  Status check_no_duplicate_keys(PgConnection& conn, const CdcTable& table);
  Status ensure_publication(PgConnection& conn);
  void adopt_legacy_names(const CdcPosition& resume);
  void warn_about_legacy_slot();
  Status check_slot_owner();
  Status check_slot_not_ahead(const CdcPosition& resume, uint64_t confirmed) const;
  Result<std::optional<uint64_t>> slot_confirmed_flush();
  // The tables of a many-table position that the stream reached: new ones get their snapshot (or none for
  // cdc_only), removed ones are forgotten.
  Status reconcile_tables(bool fresh_position);
  Status begin_snapshot(const std::optional<std::string>& exported);
  // A snapshot of one table while the stream goes on: a temporary slot gives a consistent point and its snapshot.
  Status begin_table_snapshot(size_t t);
  Result<Poll> poll_snapshot(const Budget& budget);
  // Reads up to `limit` rows of table `t` from `conn` after `after` into `result` (its part), with the snapshot
  // token `since`; true when the table is read to its end (then `after` is left as it was).
  Result<bool> read_snapshot_page(PgConnection& conn, size_t t, std::vector<std::string>& after, uint64_t since,
                                  size_t limit, Poll& result);
  Result<Poll> poll_stream(const Budget& budget);
  // One page of a table snapshotted while streaming, into `result`.
  Status poll_table_snapshot(const Budget& budget, Poll& result);
  // The server's current end of WAL (pg_current_wal_lsn), for Poll::backlog; nullopt when it cannot be asked.
  std::optional<uint64_t> server_wal_end();
  Status start_stream();
  Status drop_stream(const Error& error);
  void forget_open_transaction();
  Status handle(const PgoMessage& message);
  Status on_relation(const PgoRelation& relation);
  Status on_truncate(size_t t, const std::string& token);
  // The table a change of relation `relid` belongs to, if the source reads it and the change is not in its snapshot.
  std::optional<size_t> table_of(uint32_t relid) const;
  Status emit(size_t t, const char* op, const std::string& token, const PgoTuple& row, const PgoTuple* full_old_row,
              bool key_only);
  Status flush_pending(Poll& result);
  Status fetch_unchanged_toast();
  Status fetch_chunk(size_t t, const std::vector<size_t>& rows, const std::vector<size_t>& wanted);
  Status append_pending(Batch& batch, const PendingRow& row, std::vector<DeadLetter>& dead) const;
  Status send_status(bool reply_requested);
  Status send_status_if_due();
  // The part of `result` for table `t`: its records when the source has one table, else one of other_streams.
  Batch& part_of(Poll& result, size_t t) const;
  void start_batch(Batch& batch, const CdcTable& table) const;
  CdcTableProgress& progress(size_t t) { return pos_.tables[tables_[t].stream]; }

  nlohmann::json params_;
  std::string what_;
  std::string name_, pipeline_;
  TableSelection selection_;
  bool per_table_;
  CdcMode mode_;
  std::string slot_, publication_;
  bool slot_given_, publication_given_;
  CdcOptions options_;
  std::vector<std::string> pipeline_key_;
  std::vector<CdcTable> tables_;
  std::unordered_map<uint32_t, size_t> relids_;  // the stream's relation ids of the tables read
  std::map<std::string, uint64_t> resync_requests_;

  std::optional<PgConnection> sql_;          // catalog checks, TOAST fetches, the end of WAL
  std::optional<PgConnection> snapshot_;     // the snapshot phase's read, in the slot's exported snapshot
  std::optional<PgConnection> replication_;  // the slot and the stream
  std::optional<ReplicationStream> stream_;
  uint64_t catch_up_lsn_ = 0;  // the end of WAL at open: drained only once the stream has passed it
  bool caught_up_ = false;

  CdcPosition pos_;
  // The transaction being streamed.
  bool in_tx_ = false;
  uint64_t tx_commit_lsn_ = 0;
  int64_t tx_commit_time_ = 0;  // of the transaction being read, UTC microseconds since the Unix epoch
  uint64_t tx_index_ = 0;       // events of the transaction read so far
  // Where the transaction being read began: the pending rows and bytes before it, and the position.
  struct TransactionStart {
    size_t pending_rows = 0;
    size_t pending_bytes = 0;
    CdcPosition position;
  } tx_start_;
  size_t pending_bytes_ = 0;
  std::vector<PendingRow> pending_;  // the poll's changes, appended to its parts once unchanged TOAST is fetched

  std::mutex ack_mu_;
  uint64_t acked_lsn_ = 0;  // guarded by ack_mu_: the flush LSN the WAL commits allow
  uint64_t sent_lsn_ = 0;   // reader thread only
  Clock::time_point last_status_{};
  Clock::time_point last_reply_request_{};
  // Reader thread only: the server's end of WAL as last asked (server_wal_end), and when.
  std::optional<uint64_t> server_wal_end_;
  Clock::time_point wal_end_asked_at_{};
};

}  // namespace skippr::cdc_detail
