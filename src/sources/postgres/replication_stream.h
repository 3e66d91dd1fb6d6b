// The client side of a logical replication stream over libpq (CopyBoth): start it, read XLogData and keepalive
// frames with a short wait, answer with Standby Status Updates. Plus LSN text <-> uint64. No knowledge of tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clients/postgres/pg_client.h"
#include "core/result.h"

namespace skippr {

// "16/B374D848" <-> 0x16B374D848.
std::optional<uint64_t> parse_lsn(std::string_view text);
std::string format_lsn(uint64_t lsn);

struct ReplicationFrame {
  enum class Kind { kXLogData, kKeepalive };
  Kind kind = Kind::kXLogData;
  uint64_t wal_start = 0;        // XLogData only
  uint64_t wal_end = 0;          // the server's current end of WAL (keepalive: how far the walsender has decoded)
  bool reply_requested = false;  // keepalive only
  std::string payload;           // XLogData only: one pgoutput message
};

// Decodes one CopyData message of the stream ('w' or 'k'); kCorruption otherwise.
Result<ReplicationFrame> decode_replication_frame(std::string_view bytes);
// A Standby Status Update ('r') reporting `flush` as written, flushed and applied.
std::string encode_status_update(uint64_t flush, int64_t now_unix_micros, bool reply_requested);

// Runs a replication command (CREATE_REPLICATION_SLOT, ...) on a replication connection: the simple query protocol
// only, which such a connection requires. SQLSTATE 53400 (a configured limit such as max_replication_slots is
// reached) is kConfig: no retry frees a slot.
Result<PgRows> run_replication_command(PgConnection& conn, const std::string& command);

class ReplicationStream {
 public:
  // `conn` is a replication=database connection; it must outlive the stream.
  explicit ReplicationStream(PgConnection& conn, std::string what) : conn_(conn), what_(std::move(what)) {}

  // START_REPLICATION SLOT slot LOGICAL start (proto_version '1', publication_names 'publication'). kLocked when
  // another walsender holds the slot.
  Status start(const std::string& slot, uint64_t start_lsn, const std::string& publication);
  // The next frame, or nullopt when none arrived within `wait_ms`. kUnavailable when the stream ends or breaks.
  Result<std::optional<ReplicationFrame>> next(int wait_ms);
  Status send_status(uint64_t flush, bool reply_requested);

 private:
  PgConnection& conn_;
  std::string what_;
};

}  // namespace skippr
