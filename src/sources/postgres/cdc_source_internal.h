// Private to the Postgres CDC source: the class CdcSource and the types and constants its pieces share. The class
// is defined across cdc_source.cc (open, seek, poll, the snapshot and the stream, acknowledge), cdc_checks.cc (the
// catalog and replication slot checks) and cdc_toast_fetch.cc (reading unchanged TOASTed values by key), so it lives
// in the named namespace skippr::cdc_detail rather than in one file's anonymous namespace. Not for use elsewhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "clients/postgres/pg_client.h"
#include "core/change_fields.h"
#include "core/connector.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/cdc_source.h"
#include "sources/postgres/pg_table_reader.h"
#include "sources/postgres/pgoutput.h"
#include "sources/postgres/replication_stream.h"

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
  const char* op = "";
  std::string token;
  std::vector<PendingValue> values;  // by index in columns_ (a column added later is NULL here)
  bool to_fetch = false;             // some value is kToFetch
  bool gone = false;                 // fetched, but the key is no longer in the table: dropped (see fetch)
};

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
  // The server's current end of WAL (pg_current_wal_lsn), for Poll::backlog; nullopt when it cannot be asked.
  std::optional<uint64_t> server_wal_end();
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
  int64_t tx_commit_time_ = 0;  // of the transaction being read, UTC microseconds since the Unix epoch
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
  // Reader thread only: the server's end of WAL as last asked (server_wal_end), and when.
  std::optional<uint64_t> server_wal_end_;
  Clock::time_point wal_end_asked_at_{};
};

}  // namespace skippr::cdc_detail
