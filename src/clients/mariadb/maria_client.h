// A thin RAII layer over MariaDB Connector/C shared by whatever speaks to MySQL or MariaDB: connect from a dsn or its
// parts with a clear, classified error, run statements, read rows as text, and open the binlog dump (COM_BINLOG_DUMP
// through the connector's mariadb_rpl API) for change data capture.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/connector.h"
#include "core/result.h"

struct st_mysql;
struct st_mariadb_rpl;
struct st_mariadb_rpl_event;

namespace skippr {

// The connection parameters (dsn, or host/port/user/password/database, which override the same parts of the dsn).
std::vector<ParamSpec> maria_connection_params();
// A dsn that is not mysql://user:password@host:3306/database (or mariadb://), or a port outside 1..65535: kConfig
// with one sentence and no secret in it. Run by the factory (so `validate` catches it) and before every connect.
Status check_maria_connection_params(const nlohmann::json& params, std::string_view what);

// The database the parameters name: `database`, else the dsn's ("" when neither does).
std::string maria_database(const nlohmann::json& params);

struct MariaRows {
  std::vector<std::string> names;
  std::vector<std::vector<std::optional<std::string>>> rows;  // text protocol values; NULL as nullopt
};

class MariaConnection {
 public:
  // Auth failures and a missing database are kConfig, a refused or timed-out connection kUnavailable. The session
  // speaks utf8mb4 and UTC (time_zone '+00:00'), so TIMESTAMP values read as UTC. `read_timeout_s` bounds a read
  // that never ends (a server gone without closing the socket).
  static Result<MariaConnection> connect(const nlohmann::json& params, std::string_view what,
                                         unsigned read_timeout_s = 60);
  MariaConnection(MariaConnection&&) noexcept = default;
  MariaConnection& operator=(MariaConnection&&) noexcept = default;
  ~MariaConnection();

  Status execute(std::string_view sql);
  Result<MariaRows> query(std::string_view sql);
  // 'text' quoted for the connection's charset and SQL mode.
  std::string quote(std::string_view text);
  // The server error number of the last failed call (0: none, or the connection dropped).
  unsigned last_errno() const { return last_errno_; }
  std::string server_version() const;
  bool is_mariadb() const;
  st_mysql* raw() const { return conn_.get(); }

 private:
  struct Closer {
    void operator()(st_mysql* m) const;
  };
  MariaConnection(st_mysql* conn, std::string what, std::vector<std::string> secrets)
      : conn_(conn), what_(std::move(what)), secrets_(std::move(secrets)) {}
  Error error(std::string_view doing);

  std::unique_ptr<st_mysql, Closer> conn_;
  std::string what_;
  std::vector<std::string> secrets_;
  unsigned last_errno_ = 0;
};

// `a``b` quoting; identifiers are always quoted.
std::string maria_quote_identifier(std::string_view name);
std::string maria_qualified(std::string_view schema, std::string_view table);
// The ErrorKind a server or client error number means for the engine's retry policy.
ErrorKind maria_error_kind(unsigned error_number);

// The binlog as a replica reads it: from a file and offset, every event the server writes after it, with a
// heartbeat when nothing happens (so a read waits at most that long). Events are the connector's parsed events;
// row images are decoded by the caller (the connector's own row decoder mis-reads several types).
class BinlogDump {
 public:
  // Dumps from `file` at `offset` on `conn` (which it takes), as replica `server_id` (unique among the server's
  // replicas). The server refuses a purged or unknown file on the first next() (error 1236).
  static Result<BinlogDump> open(MariaConnection conn, const std::string& file, uint64_t offset, uint32_t server_id,
                                 double heartbeat_s, std::string_view what);
  BinlogDump(BinlogDump&&) noexcept = default;
  BinlogDump& operator=(BinlogDump&&) noexcept = default;
  ~BinlogDump();

  // The next event (valid until the next call), or the server's error: kConfig for a purged or unknown position
  // (1236), kUnavailable for a dropped connection.
  Result<const st_mariadb_rpl_event*> next();
  // The file and offset a ROTATE event names, read from the event's bytes (the connector mis-reads every rotate
  // after the first).
  std::pair<std::string, uint64_t> rotation(const st_mariadb_rpl_event& event) const;
  // The server error number of the last failed next() (0: the connection dropped).
  unsigned last_errno() const { return conn_.last_errno(); }

 private:
  struct RplCloser {
    void operator()(st_mariadb_rpl* r) const;
  };
  struct EventFree {
    void operator()(st_mariadb_rpl_event* e) const;
  };
  BinlogDump(MariaConnection conn, std::string what) : conn_(std::move(conn)), what_(std::move(what)) {}
  MariaConnection conn_;
  std::string what_;
  bool checksums_ = false;  // each event ends with a CRC32
  std::unique_ptr<st_mariadb_rpl, RplCloser> rpl_;
  std::unique_ptr<st_mariadb_rpl_event, EventFree> event_;
};

}  // namespace skippr
