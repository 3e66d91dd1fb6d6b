#include "sources/postgres/replication_stream.h"

#include <fmt/format.h>
#include <poll.h>

#include <charconv>

#include "core/time_util.h"

namespace skippr {
namespace {

uint64_t read_u64(std::string_view b, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

void put_u64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

}  // namespace

std::optional<uint64_t> parse_lsn(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size()) return std::nullopt;
  uint32_t hi = 0, lo = 0;
  auto a = std::from_chars(text.data(), text.data() + slash, hi, 16);
  auto b = std::from_chars(text.data() + slash + 1, text.data() + text.size(), lo, 16);
  if (a.ec != std::errc() || a.ptr != text.data() + slash || b.ec != std::errc() ||
      b.ptr != text.data() + text.size()) {
    return std::nullopt;
  }
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

std::string format_lsn(uint64_t lsn) { return fmt::format("{:X}/{:X}", lsn >> 32, lsn & 0xffffffffu); }

Result<ReplicationFrame> decode_replication_frame(std::string_view b) {
  ReplicationFrame f;
  if (!b.empty() && b[0] == 'w' && b.size() >= 25) {
    f.kind = ReplicationFrame::Kind::kXLogData;
    f.wal_start = read_u64(b, 1);
    f.wal_end = read_u64(b, 9);
    f.payload.assign(b.substr(25));  // after the send time
    return f;
  }
  if (!b.empty() && b[0] == 'k' && b.size() >= 18) {
    f.kind = ReplicationFrame::Kind::kKeepalive;
    f.wal_end = read_u64(b, 1);
    f.reply_requested = b[17] != 0;
    return f;
  }
  return fail(ErrorKind::kCorruption,
              fmt::format("unexpected replication frame ('{}', {} bytes)", b.empty() ? ' ' : b[0], b.size()));
}

std::string encode_status_update(uint64_t flush, int64_t now_unix_micros, bool reply_requested) {
  std::string out = "r";
  put_u64(out, flush);  // written
  put_u64(out, flush);  // flushed: what the slot may forget
  put_u64(out, flush);  // applied
  put_u64(out, static_cast<uint64_t>(now_unix_micros - kPgEpochUnixMicros));
  out.push_back(reply_requested ? 1 : 0);
  return out;
}

Result<PgRows> run_replication_command(PgConnection& conn, const std::string& command) {
  PGresult* res = PQexec(conn.raw(), command.c_str());
  const auto status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    ErrorKind kind = conn.broken() || !state ? ErrorKind::kUnavailable : pg_error_kind(state);
    // configuration_limit_exceeded ("all replication slots are in use"): waiting does not free a slot, the user must.
    if (state && std::string_view(state) == "53400") kind = ErrorKind::kConfig;
    std::string message = res ? PQresultErrorMessage(res) : PQerrorMessage(conn.raw());
    while (!message.empty() && message.back() == '\n') message.pop_back();
    PQclear(res);
    return fail(kind, message);
  }
  PgRows out;
  for (int r = 0; r < PQntuples(res); ++r) {
    auto& row = out.rows.emplace_back();
    for (int c = 0; c < PQnfields(res); ++c) {
      row.push_back(PQgetisnull(res, r, c)
                        ? std::nullopt
                        : std::optional<std::string>(std::string(PQgetvalue(res, r, c), PQgetlength(res, r, c))));
    }
  }
  PQclear(res);
  return out;
}

Status ReplicationStream::start(const std::string& slot, uint64_t start_lsn, const std::string& publication) {
  const std::string sql =
      fmt::format("START_REPLICATION SLOT {} LOGICAL {} (proto_version '1', publication_names {})",
                  pg_quote_identifier(slot), format_lsn(start_lsn), pg_quote_literal(pg_quote_identifier(publication)));
  PGresult* res = PQexec(conn_.raw(), sql.c_str());
  const auto status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  const bool busy = state && std::string_view(state) == "55006";  // object_in_use: another walsender has the slot
  std::string message = res ? PQresultErrorMessage(res) : PQerrorMessage(conn_.raw());
  while (!message.empty() && message.back() == '\n') message.pop_back();
  PQclear(res);
  if (status != PGRES_COPY_BOTH) {
    return fail(busy ? ErrorKind::kLocked : ErrorKind::kUnavailable,
                fmt::format("{}: starting logical replication from slot {} failed: {}{}", what_, slot, message,
                            busy ? " (another process reads from this slot)" : ""));
  }
  return ok();
}

Result<std::optional<ReplicationFrame>> ReplicationStream::next(int wait_ms) {
  PGconn* c = conn_.raw();
  for (int round = 0; round < 2; ++round) {
    char* buffer = nullptr;
    const int n = PQgetCopyData(c, &buffer, /*async=*/1);
    if (n > 0) {
      auto frame = decode_replication_frame(std::string_view(buffer, static_cast<size_t>(n)));
      PQfreemem(buffer);
      if (!frame) return std::unexpected(frame.error());
      return std::optional<ReplicationFrame>(std::move(*frame));
    }
    if (n < 0) {  // the server ended the stream (-1, its reason in the next result) or the connection broke (-2)
      std::string reason;
      if (PGresult* res = n == -1 ? PQgetResult(c) : nullptr) {
        reason = PQresultErrorMessage(res);
        PQclear(res);
      }
      if (reason.empty()) reason = PQerrorMessage(c);
      while (!reason.empty() && reason.back() == '\n') reason.pop_back();
      return fail(ErrorKind::kUnavailable, fmt::format("{}: the replication stream ended: {}", what_, reason));
    }
    if (round == 1) break;
    // Nothing buffered: wait for the socket, then let libpq read what arrived.
    pollfd pfd{PQsocket(c), POLLIN, 0};
    if (::poll(&pfd, 1, wait_ms) <= 0) return std::optional<ReplicationFrame>();
    if (PQconsumeInput(c) == 0) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("{}: reading the replication stream failed: {}", what_, PQerrorMessage(c)));
    }
  }
  return std::optional<ReplicationFrame>();
}

Status ReplicationStream::send_status(uint64_t flush, bool reply_requested) {
  const std::string msg = encode_status_update(flush, now_micros(), reply_requested);
  if (PQputCopyData(conn_.raw(), msg.data(), static_cast<int>(msg.size())) != 1 || PQflush(conn_.raw()) != 0) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("{}: sending a status update failed: {}", what_, PQerrorMessage(conn_.raw())));
  }
  return ok();
}

}  // namespace skippr
