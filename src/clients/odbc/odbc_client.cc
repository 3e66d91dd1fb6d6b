#include "clients/odbc/odbc_client.h"

#include <fmt/format.h>
#include <sql.h>
#include <sqlext.h>

namespace skippr {

struct OdbcConnection::Handles {
  SQLHENV env = SQL_NULL_HENV;
  SQLHDBC dbc = SQL_NULL_HDBC;
  bool connected = false;
  ~Handles() {
    if (connected) SQLDisconnect(dbc);
    if (dbc != SQL_NULL_HDBC) SQLFreeHandle(SQL_HANDLE_DBC, dbc);
    if (env != SQL_NULL_HENV) SQLFreeHandle(SQL_HANDLE_ENV, env);
  }
};

namespace {

struct Diagnostic {
  std::string sqlstate;
  int native = 0;       // the server's error number (SQL Server's: 18456, 208, ...), 0 when the driver raised it
  std::string message;  // every record, the driver's "[vendor][component]" prefixes dropped
};

Diagnostic diagnostic_of(SQLSMALLINT type, SQLHANDLE handle) {
  Diagnostic d;
  for (SQLSMALLINT record = 1;; ++record) {
    SQLCHAR state[6] = {0};
    SQLCHAR text[2048] = {0};
    SQLINTEGER native = 0;
    SQLSMALLINT length = 0;
    const SQLRETURN rc = SQLGetDiagRec(type, handle, record, state, &native, text, sizeof(text), &length);
    if (!SQL_SUCCEEDED(rc)) break;
    std::string message(reinterpret_cast<const char*>(text));
    while (message.starts_with('[')) {
      const auto end = message.find(']');
      if (end == std::string::npos) break;
      message.erase(0, end + 1);
    }
    if (d.sqlstate.empty()) {
      d.sqlstate = reinterpret_cast<const char*>(state);
      d.native = static_cast<int>(native);
    }
    if (!message.empty() && d.message.find(message) == std::string::npos) {
      d.message += (d.message.empty() ? "" : "; ") + message;
    }
  }
  if (d.message.empty()) d.message = "the ODBC driver gave no reason";
  return d;
}

bool is_link_failure(std::string_view sqlstate) { return sqlstate.starts_with("08") || sqlstate == "HYT00"; }

// The engine's retry policy for what the server refused, by SQL Server's error number: FreeTDS gives SQLSTATE 42000
// to every server error it has no mapping for (a paused pool, a busy service, a lock timeout alike), so the SQLSTATE
// cannot tell a wrong name from a passing outage.
ErrorKind server_error_kind(const Diagnostic& d) {
  switch (d.native) {
    case 18456:  // login failed
    case 4060:   // cannot open the database
    case 102:    // syntax
    case 207:    // invalid column name
    case 208:    // invalid object name
    case 229:    // permission denied
    case 262:    // permission denied in the database
    case 2760:   // the schema does not exist or may not be used
      return ErrorKind::kConfig;
    case 241:   // date/time conversion
    case 245:   // conversion
    case 8114:  // conversion
    case 8115:  // arithmetic overflow
    case 8152:  // string would be truncated
      return ErrorKind::kBadInput;
    default:
      break;
  }
  if (d.native == 0 && (d.sqlstate.starts_with("IM") || d.sqlstate == "28000")) return ErrorKind::kConfig;
  return ErrorKind::kUnavailable;  // paused or scaling pools, busy service, deadlocks, storage reads: retried
}

}  // namespace

std::string odbc_braced(std::string_view value) { return fmt::format("{{{}}}", value); }

bool odbc_quotable(std::string_view value) { return value.find('}') == std::string_view::npos; }

OdbcConnection::OdbcConnection(std::unique_ptr<Handles> handles) : handles_(std::move(handles)) {}
OdbcConnection::OdbcConnection(OdbcConnection&&) noexcept = default;
OdbcConnection& OdbcConnection::operator=(OdbcConnection&&) noexcept = default;
OdbcConnection::~OdbcConnection() = default;

Result<OdbcConnection> OdbcConnection::connect(const std::string& connection_string, std::string_view what) {
  auto handles = std::make_unique<Handles>();
  if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &handles->env)) ||
      !SQL_SUCCEEDED(
          SQLSetEnvAttr(handles->env, SQL_ATTR_ODBC_VERSION, reinterpret_cast<SQLPOINTER>(SQL_OV_ODBC3), 0)) ||
      !SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_DBC, handles->env, &handles->dbc))) {
    return fail(ErrorKind::kInternal, fmt::format("{}: the ODBC driver manager could not be initialised", what));
  }
  SQLSetConnectAttr(handles->dbc, SQL_ATTR_LOGIN_TIMEOUT, reinterpret_cast<SQLPOINTER>(15), 0);
  SQLCHAR out[1024];
  SQLSMALLINT out_length = 0;
  const SQLRETURN rc =
      SQLDriverConnect(handles->dbc, nullptr, reinterpret_cast<SQLCHAR*>(const_cast<char*>(connection_string.c_str())),
                       SQL_NTS, out, sizeof(out), &out_length, SQL_DRIVER_NOPROMPT);
  if (!SQL_SUCCEEDED(rc)) {
    const Diagnostic d = diagnostic_of(SQL_HANDLE_DBC, handles->dbc);
    // A refused login, an unknown database or a driver that cannot be loaded is kConfig: waiting fixes none of them.
    return fail(server_error_kind(d),
                fmt::format("{}: could not connect (SQLSTATE {}): {}", what, d.sqlstate, d.message));
  }
  handles->connected = true;
  return OdbcConnection(std::move(handles));
}

Status OdbcConnection::execute(std::string_view sql) {
  auto rows = run(sql, false);
  if (!rows) return std::unexpected(rows.error());
  return ok();
}

Result<OdbcRows> OdbcConnection::query(std::string_view sql) { return run(sql, true); }

Result<OdbcRows> OdbcConnection::run(std::string_view sql, bool want_rows) {
  if (broken_) return fail(ErrorKind::kUnknownOutcome, "the connection to the server was lost");
  SQLHSTMT stmt = SQL_NULL_HSTMT;
  if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_STMT, handles_->dbc, &stmt))) {
    const Diagnostic d = diagnostic_of(SQL_HANDLE_DBC, handles_->dbc);
    broken_ = is_link_failure(d.sqlstate);
    return fail(broken_ ? ErrorKind::kUnknownOutcome : ErrorKind::kUnavailable, d.message);
  }
  struct StatementCloser {
    SQLHSTMT s;
    ~StatementCloser() { SQLFreeHandle(SQL_HANDLE_STMT, s); }
  } closer{stmt};
  // A statement on a link that went silent fails after this instead of hanging; its outcome is then unknown.
  if (statement_timeout_seconds_ > 0) {
    SQLSetStmtAttr(stmt, SQL_ATTR_QUERY_TIMEOUT,
                   reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(statement_timeout_seconds_)), 0);
  }
  auto failed = [&]() -> Result<OdbcRows> {
    const Diagnostic d = diagnostic_of(SQL_HANDLE_STMT, stmt);
    last_sqlstate_ = d.sqlstate;
    broken_ = is_link_failure(d.sqlstate);
    // A statement the server answered with an error is a definite failure; a lost link leaves it unknown.
    return fail(broken_ ? ErrorKind::kUnknownOutcome : server_error_kind(d),
                fmt::format("{} (SQLSTATE {})", d.message, d.sqlstate));
  };
  SQLRETURN rc = SQLExecDirect(stmt, reinterpret_cast<SQLCHAR*>(const_cast<char*>(sql.data())),
                               static_cast<SQLINTEGER>(sql.size()));
  if (!SQL_SUCCEEDED(rc) && rc != SQL_NO_DATA) return failed();
  OdbcRows rows;
  SQLSMALLINT columns = 0;
  if (rc != SQL_NO_DATA && want_rows && SQL_SUCCEEDED(SQLNumResultCols(stmt, &columns)) && columns > 0) {
    while ((rc = SQLFetch(stmt)) != SQL_NO_DATA) {
      if (!SQL_SUCCEEDED(rc)) return failed();
      auto& row = rows.emplace_back();
      for (SQLUSMALLINT c = 1; c <= static_cast<SQLUSMALLINT>(columns); ++c) {
        std::string value;
        bool null = false;
        char chunk[4096];
        for (;;) {
          SQLLEN indicator = 0;
          rc = SQLGetData(stmt, c, SQL_C_CHAR, chunk, sizeof(chunk), &indicator);
          if (rc == SQL_NO_DATA) break;
          if (!SQL_SUCCEEDED(rc)) return failed();
          if (indicator == SQL_NULL_DATA) {
            null = true;
            break;
          }
          const size_t got = (indicator == SQL_NO_TOTAL || indicator >= static_cast<SQLLEN>(sizeof(chunk)))
                                 ? sizeof(chunk) - 1
                                 : static_cast<size_t>(indicator);
          value.append(chunk, got);
          if (rc == SQL_SUCCESS) break;  // SQL_SUCCESS_WITH_INFO: truncated, more to read
        }
        row.push_back(null ? std::nullopt : std::optional<std::string>(std::move(value)));
      }
    }
  }
  // Drain the remaining results, so an error raised after the first one (or by a later statement) is not lost.
  while ((rc = SQLMoreResults(stmt)) != SQL_NO_DATA) {
    if (!SQL_SUCCEEDED(rc)) return failed();
  }
  return rows;
}

}  // namespace skippr
