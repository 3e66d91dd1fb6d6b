#include "clients/postgres/pg_client.h"

#include <fmt/format.h>

#include <charconv>

#include "core/redact.h"

namespace skippr {
namespace {

struct ResultCloser {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResultPtr = std::unique_ptr<PGresult, ResultCloser>;

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// libpq's connection errors are several lines ("...: Connection refused\n\tIs the server running ...?"): one
// sentence each, joined on one line for a log and the status page.
std::string one_line(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    while (i + 1 < text.size() && (text[i + 1] == '\t' || text[i + 1] == ' ')) ++i;
    if (!out.empty() && out.back() != '.' && out.back() != '?' && out.back() != ':') out += '.';
    out += ' ';
  }
  return out;
}

std::string param_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// libpq reports a failed connection as text only (no SQLSTATE), so the few messages a user can fix are recognised.
ErrorKind connect_error_kind(std::string_view message) {
  for (std::string_view config_sign :
       {"password authentication failed", "no pg_hba.conf entry", "does not exist", "no password supplied",
        "invalid connection option", "could not translate host", "missing \"=\"", "invalid URI", "permission denied"}) {
    if (message.find(config_sign) != std::string_view::npos) return ErrorKind::kConfig;
  }
  return ErrorKind::kUnavailable;
}

// The password given as a parameter, and the one inside the dsn (as written and decoded). A dsn libpq cannot parse
// is a secret as a whole: nobody can tell which part of it is the password.
std::vector<std::string> connection_secrets(const nlohmann::json& params) {
  std::vector<std::string> secrets;
  if (params.contains("password") && !params["password"].is_null()) secrets.push_back(param_text(params["password"]));
  if (!params.contains("dsn") || params["dsn"].is_null()) return secrets;
  const std::string dsn = param_text(params["dsn"]);
  // URI form: scheme://user:password@host...
  if (auto scheme = dsn.find("://"); scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t at = dsn.rfind('@');
    const size_t colon = dsn.find(':', start);
    if (at != std::string::npos && colon != std::string::npos && colon < at) {
      const std::string raw = dsn.substr(colon + 1, at - colon - 1);
      secrets.push_back(raw);
      secrets.push_back(percent_decode(raw));
    }
  }
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &error);
  if (options == nullptr) {
    secrets.push_back(dsn);
  } else {
    for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
      if (std::string_view(o->keyword) == "password" && o->val != nullptr) secrets.emplace_back(o->val);
    }
    PQconninfoFree(options);
  }
  if (error != nullptr) PQfreemem(error);
  return secrets;
}

bool valid_port(std::string_view text) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  return ec == std::errc() && end == text.data() + text.size() && port >= 1 && port <= 65535;
}

bool valid_sslmode(std::string_view mode) {
  for (std::string_view known : {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}) {
    if (mode == known) return true;
  }
  return false;
}

}  // namespace

Status check_pg_connection_params(const nlohmann::json& params, std::string_view what) {
  const auto secrets = connection_secrets(params);
  auto bad = [&](std::string message) { return fail(ErrorKind::kConfig, redact(std::move(message), secrets)); };
  std::vector<std::pair<std::string, std::string>> given;  // (keyword, value) to check
  if (params.contains("dsn") && !params["dsn"].is_null()) {
    char* error = nullptr;
    PQconninfoOption* options = PQconninfoParse(param_text(params["dsn"]).c_str(), &error);
    if (options == nullptr) {
      // libpq's reason quotes pieces of the string (any of which may be the password), so it is left out.
      if (error != nullptr) PQfreemem(error);
      return bad(
          fmt::format("{}: dsn is not a valid PostgreSQL connection string or URI; write it as "
                      "postgresql://user:password@host:5432/database, percent-encoding special characters "
                      "in the password (%25 for %), or give host/port/user/password/database separately",
                      what));
    }
    for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
      if (o->val != nullptr) given.emplace_back(o->keyword, o->val);
    }
    PQconninfoFree(options);
    if (error != nullptr) PQfreemem(error);
  }
  if (params.contains("port") && !params["port"].is_null()) given.emplace_back("port", param_text(params["port"]));
  for (const auto& [keyword, value] : given) {
    if (keyword == "port" && !valid_port(value)) {
      return bad(fmt::format("{}: port '{}' is not a TCP port (1 to 65535)", what, value));
    }
    if (keyword == "sslmode" && !valid_sslmode(value)) {
      return bad(fmt::format("{}: sslmode '{}' is not one of disable, allow, prefer, require, verify-ca, verify-full",
                             what, value));
    }
  }
  return ok();
}

std::vector<ParamSpec> pg_connection_params() {
  return {
      {"dsn", ParamType::kString, false, nullptr,
       "a libpq connection string or URI (postgresql://user:pass@host:5432/db); the keys below override its parts"},
      {"host", ParamType::kString, false, nullptr, "server host name or address"},
      {"port", ParamType::kInt, false, nullptr, "server port (default 5432)"},
      {"user", ParamType::kString, false, nullptr, "user name"},
      {"password", ParamType::kString, false, nullptr, "password; prefer ${PGPASSWORD_VAR} from the environment"},
      {"database", ParamType::kString, false, nullptr, "database name"},
  };
}

Result<PgConnection> PgConnection::connect(const nlohmann::json& params, std::string_view what, bool replication) {
  SKIPPR_TRY(check_pg_connection_params(params, what));
  std::vector<std::string> keys, values;
  if (params.contains("dsn") && !params["dsn"].is_null()) {
    keys.push_back("dbname");  // expanded as a connection string because expand_dbname = 1
    values.push_back(param_text(params["dsn"]));
  }
  for (auto [param, keyword] : {std::pair{"host", "host"},
                                {"port", "port"},
                                {"user", "user"},
                                {"password", "password"},
                                {"database", "dbname"}}) {
    if (params.contains(param) && !params[param].is_null()) {
      keys.push_back(keyword);
      values.push_back(param_text(params[param]));
    }
  }
  keys.push_back("connect_timeout");
  values.push_back("10");
  keys.push_back("application_name");
  values.push_back("skipprd");
  if (replication) {
    keys.push_back("replication");
    values.push_back("database");
  }
  std::vector<const char*> k, v;
  for (size_t i = 0; i < keys.size(); ++i) {
    k.push_back(keys[i].c_str());
    v.push_back(values[i].c_str());
  }
  k.push_back(nullptr);
  v.push_back(nullptr);
  PGconn* raw = PQconnectdbParams(k.data(), v.data(), /*expand_dbname=*/1);
  PgConnection conn(raw);
  if (!raw) return fail(ErrorKind::kUnavailable, fmt::format("{}: out of memory connecting to PostgreSQL", what));
  if (PQstatus(raw) == CONNECTION_OK) {
    // NOTICEs ("relation already exists, skipping") are expected chatter, not something to print on stderr.
    PQsetNoticeProcessor(
        raw, [](void*, const char*) {}, nullptr);
  }
  if (PQstatus(raw) != CONNECTION_OK) {
    // libpq may quote what it was given (a host, an option's value): nothing of a password may pass.
    const std::string message = one_line(redact(trim(PQerrorMessage(raw)), connection_secrets(params)));
    const ErrorKind kind = connect_error_kind(message);
    // libpq often asks already ("Is the server running on that host and accepting TCP/IP connections?").
    const bool asked = message.find("Is the server running") != std::string::npos;
    const char* advice = kind == ErrorKind::kConfig ? "Check dsn/host/port/user/password/database in skippr.yml"
                         : asked                    ? "The run is retried"
                                                    : "Is the server running and reachable? The run is retried";
    return fail(kind, fmt::format("{}: cannot connect to PostgreSQL: {}{} {}", what, message,
                                  message.ends_with('?') || message.ends_with('.') ? "" : ".", advice));
  }
  return conn;
}

Error PgConnection::error_from(PGresult* res, std::string_view sql) {
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  last_sqlstate_ = state ? state : "";
  std::string message = trim(res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res) : PQerrorMessage(raw()));
  ErrorKind kind = broken() || last_sqlstate_.empty() ? ErrorKind::kUnavailable : pg_error_kind(last_sqlstate_);
  std::string head(sql.substr(0, 80));
  if (head.size() < sql.size()) head += "...";
  return Error{kind, fmt::format("{} (while running: {})", message, head)};
}

Status PgConnection::execute(std::string_view sql) {
  PgResultPtr res(PQexec(raw(), std::string(sql).c_str()));
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return std::unexpected(error_from(res.get(), sql));
  return ok();
}

Result<PgRows> PgConnection::query(std::string_view sql, const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PgResultPtr res(PQexecParams(raw(), std::string(sql).c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                               nullptr, nullptr, 0));
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return std::unexpected(error_from(res.get(), sql));
  PgRows out;
  const int rows = PQntuples(res.get()), cols = PQnfields(res.get());
  out.rows.reserve(rows);
  for (int r = 0; r < rows; ++r) {
    auto& row = out.rows.emplace_back();
    for (int c = 0; c < cols; ++c) {
      if (PQgetisnull(res.get(), r, c)) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(std::string(PQgetvalue(res.get(), r, c), PQgetlength(res.get(), r, c)));
      }
    }
  }
  return out;
}

Status PgConnection::copy_start(std::string_view copy_sql) {
  PgResultPtr res(PQexec(raw(), std::string(copy_sql).c_str()));
  if (!res || PQresultStatus(res.get()) != PGRES_COPY_IN) return std::unexpected(error_from(res.get(), copy_sql));
  return ok();
}

Status PgConnection::copy_put(std::string_view data) {
  if (PQputCopyData(raw(), data.data(), static_cast<int>(data.size())) != 1) {
    return fail(ErrorKind::kUnavailable, fmt::format("sending COPY data failed: {}", trim(PQerrorMessage(raw()))));
  }
  return ok();
}

Status PgConnection::copy_finish() {
  if (PQputCopyEnd(raw(), nullptr) != 1) {
    return fail(ErrorKind::kUnavailable, fmt::format("ending COPY failed: {}", trim(PQerrorMessage(raw()))));
  }
  Status status = ok();
  while (PGresult* raw_res = PQgetResult(raw())) {
    PgResultPtr res(raw_res);
    if (PQresultStatus(res.get()) != PGRES_COMMAND_OK && status)
      status = std::unexpected(error_from(res.get(), "COPY"));
  }
  return status;
}

std::string PgConnection::server_version() const { return std::to_string(PQserverVersion(raw())); }

std::string pg_quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string pg_quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string pg_qualified(std::string_view schema, std::string_view table) {
  return pg_quote_identifier(schema) + "." + pg_quote_identifier(table);
}

ErrorKind pg_error_kind(std::string_view sqlstate) {
  const std::string_view cls = sqlstate.substr(0, 2);
  if (cls == "08" || cls == "40" || cls == "53" || cls == "57" || cls == "58" || sqlstate == "55P03") {
    return ErrorKind::kUnavailable;  // connection, rollback (deadlock/serialization), resources, shutdown, lock timeout
  }
  if (cls == "28" || cls == "3D" || cls == "3F" || cls == "42") return ErrorKind::kConfig;  // auth, names, privileges
  if (cls == "22") return ErrorKind::kBadInput;  // a value the column cannot hold
  if (cls == "54") return ErrorKind::kBadInput;  // a limit the data exceeds (too many columns): retrying cannot help
  return ErrorKind::kInternal;
}

}  // namespace skippr
