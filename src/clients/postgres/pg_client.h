// A thin RAII layer over libpq shared by the Postgres sink and source: connect with a clear, classified error,
// run statements (with parameters), stream COPY data, and map SQLSTATEs to the engine's ErrorKinds once.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/connector.h"
#include "core/result.h"

namespace skippr {

// PostgreSQL's clock origin (timestamps, dates, the replication protocol) is 2000-01-01; ours is the Unix epoch.
inline constexpr int64_t kPgEpochUnixMicros = 946684800LL * 1000000;
inline constexpr int64_t kPgEpochUnixDays = 10957;

// The connection parameters every Postgres connector takes (dsn, or host/port/user/password/database, which override
// the same parts of the dsn).
std::vector<ParamSpec> pg_connection_params();

struct PgRows {
  std::vector<std::vector<std::optional<std::string>>> rows;
};

class PgConnection {
 public:
  // `what` names the connector in error messages ("sink 'warehouse'"). Auth failures and a missing database are
  // kConfig, a refused or timed-out connection is kUnavailable. `replication` opens a logical replication connection.
  static Result<PgConnection> connect(const nlohmann::json& params, std::string_view what, bool replication = false);

  PgConnection(PgConnection&&) noexcept = default;
  PgConnection& operator=(PgConnection&&) noexcept = default;

  Status execute(std::string_view sql);
  Result<PgRows> query(std::string_view sql, const std::vector<std::optional<std::string>>& params = {});
  // COPY ... FROM STDIN: `start` runs the statement, `put` streams bytes, `finish` ends it and reports the server's
  // verdict.
  Status copy_start(std::string_view copy_sql);
  Status copy_put(std::string_view data);
  Status copy_finish();

  // True once the server connection is gone (then every further call fails; the owner reconnects).
  bool broken() const { return PQstatus(conn_.get()) != CONNECTION_OK; }
  // The SQLSTATE of the last failed statement, "" when it failed without one (e.g. the connection dropped).
  const std::string& last_sqlstate() const { return last_sqlstate_; }
  PGconn* raw() const { return conn_.get(); }
  std::string server_version() const;

 private:
  struct Closer {
    void operator()(PGconn* c) const { PQfinish(c); }
  };
  explicit PgConnection(PGconn* conn) : conn_(conn) {}
  Error error_from(PGresult* res, std::string_view sql);

  std::unique_ptr<PGconn, Closer> conn_;
  std::string last_sqlstate_;
};

// "a""b" quoting; identifiers are always quoted, so their case is kept exactly.
// A dsn libpq cannot parse, a port outside 1..65535 or an unknown sslmode: kConfig (exit 2) with one sentence, no
// secret in it. Run by the connectors' factories (so `validate` catches it) and before every connect.
Status check_pg_connection_params(const nlohmann::json& params, std::string_view what);

std::string pg_quote_identifier(std::string_view name);
// 'it''s' quoting (standard_conforming_strings is on in every supported server).
std::string pg_quote_literal(std::string_view text);
// schema.table, both quoted.
std::string pg_qualified(std::string_view schema, std::string_view table);

// The ErrorKind a SQLSTATE means for the engine's retry policy.
ErrorKind pg_error_kind(std::string_view sqlstate);

// BEGIN ... COMMIT on `conn`: rolled back unless committed; on a broken connection there is nothing left to roll back.
class PgTransaction {
 public:
  explicit PgTransaction(PgConnection& conn) : conn_(conn) {}
  ~PgTransaction() {
    if (!done_ && !conn_.broken()) (void)conn_.execute("ROLLBACK");
  }
  PgTransaction(const PgTransaction&) = delete;
  PgTransaction& operator=(const PgTransaction&) = delete;
  Status begin() { return conn_.execute("BEGIN"); }
  Status commit() {
    done_ = true;
    return conn_.execute("COMMIT");
  }

 private:
  PgConnection& conn_;
  bool done_ = false;
};

}  // namespace skippr
