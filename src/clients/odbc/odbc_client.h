// A thin RAII layer over ODBC (unixODBC's driver manager) for the sinks that speak to SQL Server's family over TDS
// (Synapse): connect with a connection string, run statements, read rows as text, and classify diagnostics once.
// The connection string holds a password: it is never put in a message, and neither is a statement the caller marks
// secret (a COPY INTO with a storage key).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

using OdbcRows = std::vector<std::vector<std::optional<std::string>>>;

class OdbcConnection {
 public:
  // `what` names the connector in messages. A refused login (18456) or an unknown database (4060) is kConfig; a
  // server that cannot be reached, or a pool that is paused, is kUnavailable.
  static Result<OdbcConnection> connect(const std::string& connection_string, std::string_view what);

  OdbcConnection(OdbcConnection&&) noexcept;
  OdbcConnection& operator=(OdbcConnection&&) noexcept;
  ~OdbcConnection();

  Status execute(std::string_view sql);
  // Every row of the statement's first result set, each value as text (NULL as nullopt).
  Result<OdbcRows> query(std::string_view sql);

  // True once the link is gone (a communication-link SQLSTATE, class 08): every further call fails, the owner
  // reconnects, and a statement that was in flight has an unknown outcome.
  bool broken() const { return broken_; }
  // Every later statement fails with an unknown outcome after this many seconds without an answer (0: never).
  void set_statement_timeout(int seconds) { statement_timeout_seconds_ = seconds; }
  const std::string& last_sqlstate() const { return last_sqlstate_; }

 private:
  struct Handles;
  explicit OdbcConnection(std::unique_ptr<Handles> handles);
  Result<OdbcRows> run(std::string_view sql, bool want_rows);

  std::unique_ptr<Handles> handles_;
  bool broken_ = false;
  int statement_timeout_seconds_ = 0;
  std::string last_sqlstate_;
};

// {value}: ODBC's quoting of a connection-string attribute, so a password may hold ';' or '='. A '}' inside cannot
// be quoted for FreeTDS (it keeps the doubled "}}" ODBC specifies as is), so callers refuse one (odbc_quotable).
std::string odbc_braced(std::string_view value);
bool odbc_quotable(std::string_view value);

}  // namespace skippr
