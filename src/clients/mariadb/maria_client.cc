#include "clients/mariadb/maria_client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <mysql.h>  // before mariadb_rpl.h, which uses its types

#include <mariadb_rpl.h>
#include <mysqld_error.h>

#include <charconv>

#include "core/redact.h"

namespace skippr {
namespace {

std::string param_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

bool has(const nlohmann::json& params, const char* name) { return params.contains(name) && !params[name].is_null(); }

// The parts of a dsn (mysql://user:password@host:port/database), decoded; empty where absent.
struct DsnParts {
  std::string user, password, host, port, database;
};

// Parsed with libcurl's URL parser (the one the HTTP client uses), so no URL grammar is written here.
std::optional<DsnParts> parse_dsn(const std::string& dsn) {
  if (!dsn.starts_with("mysql://") && !dsn.starts_with("mariadb://")) return std::nullopt;
  CURLU* url = curl_url();
  if (url == nullptr) return std::nullopt;
  std::optional<DsnParts> parts;
  if (curl_url_set(url, CURLUPART_URL, dsn.c_str(), CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK) {
    parts.emplace();
    auto get = [&](CURLUPart part, std::string& out) {
      char* text = nullptr;
      if (curl_url_get(url, part, &text, CURLU_URLDECODE) == CURLUE_OK && text != nullptr) out = text;
      curl_free(text);
    };
    get(CURLUPART_USER, parts->user);
    get(CURLUPART_PASSWORD, parts->password);
    get(CURLUPART_HOST, parts->host);
    get(CURLUPART_PORT, parts->port);
    get(CURLUPART_PATH, parts->database);
    if (parts->database.starts_with('/')) parts->database.erase(0, 1);
  }
  curl_url_cleanup(url);
  return parts;
}

bool valid_port(std::string_view text) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  return ec == std::errc() && end == text.data() + text.size() && port >= 1 && port <= 65535;
}

// The password given as a parameter and the one inside the dsn (as written and decoded); a dsn that cannot be
// parsed is a secret as a whole.
std::vector<std::string> connection_secrets(const nlohmann::json& params) {
  std::vector<std::string> secrets;
  if (has(params, "password")) secrets.push_back(param_text(params["password"]));
  if (!has(params, "dsn")) return secrets;
  const std::string dsn = param_text(params["dsn"]);
  auto parts = parse_dsn(dsn);
  if (!parts) {
    secrets.push_back(dsn);
  } else if (!parts->password.empty()) {
    secrets.push_back(parts->password);
    const auto at = dsn.rfind('@');
    const auto colon = dsn.find(':', dsn.find("://") + 3);
    if (at != std::string::npos && colon != std::string::npos && colon < at) {
      secrets.push_back(dsn.substr(colon + 1, at - colon - 1));
    }
  }
  return secrets;
}

}  // namespace

std::vector<ParamSpec> maria_connection_params() {
  return {
      {"dsn", ParamType::kString, false, nullptr,
       "mysql://user:pass@host:3306/database (mariadb:// too); the keys below override its parts"},
      {"host", ParamType::kString, false, nullptr, "server host name or address"},
      {"port", ParamType::kInt, false, nullptr, "server port (default 3306)"},
      {"user", ParamType::kString, false, nullptr, "user name"},
      {"password", ParamType::kString, false, nullptr, "password; prefer ${MYSQL_PASSWORD_VAR} from the environment"},
      {"database", ParamType::kString, false, nullptr, "the database (schema) the tables are in"},
  };
}

Status check_maria_connection_params(const nlohmann::json& params, std::string_view what) {
  const auto secrets = connection_secrets(params);
  auto bad = [&](std::string message) { return fail(ErrorKind::kConfig, redact(std::move(message), secrets)); };
  std::vector<std::string> ports;
  if (has(params, "dsn")) {
    auto parts = parse_dsn(param_text(params["dsn"]));
    if (!parts) {
      return bad(
          fmt::format("{}: dsn is not a MySQL URI; write it as mysql://user:password@host:3306/database, "
                      "percent-encoding special characters in the password (%25 for %), or give "
                      "host/port/user/password/database separately",
                      what));
    }
    if (!parts->port.empty()) ports.push_back(parts->port);
  }
  if (has(params, "port")) ports.push_back(param_text(params["port"]));
  for (const auto& port : ports) {
    if (!valid_port(port)) return bad(fmt::format("{}: port '{}' is not a TCP port (1 to 65535)", what, port));
  }
  if (!has(params, "database") && (!has(params, "dsn") || parse_dsn(param_text(params["dsn"]))->database.empty())) {
    return bad(
        fmt::format("{}: no database: name the one the tables are in (database: shop, or .../shop in the dsn)", what));
  }
  return ok();
}

std::string maria_database(const nlohmann::json& params) {
  if (has(params, "database")) return param_text(params["database"]);
  if (!has(params, "dsn")) return "";
  auto parts = parse_dsn(param_text(params["dsn"]));
  return parts ? parts->database : "";
}

void MariaConnection::Closer::operator()(st_mysql* m) const { mysql_close(m); }

MariaConnection::~MariaConnection() = default;

ErrorKind maria_error_kind(unsigned error_number) {
  switch (error_number) {
    case ER_ACCESS_DENIED_ERROR:
    case ER_DBACCESS_DENIED_ERROR:
    case ER_BAD_DB_ERROR:
    case ER_NO_SUCH_TABLE:
    case ER_BAD_FIELD_ERROR:
    case ER_SPECIFIC_ACCESS_DENIED_ERROR:
    case ER_TABLEACCESS_DENIED_ERROR:
    case ER_COLUMNACCESS_DENIED_ERROR:
    case ER_MASTER_FATAL_ERROR_READING_BINLOG:  // 1236: a purged or unknown binlog position
    case ER_UNKNOWN_SYSTEM_VARIABLE:
    case ER_PARSE_ERROR:
      return ErrorKind::kConfig;
    default:
      return ErrorKind::kUnavailable;  // dropped connections, deadlocks, lock waits, a server shutting down
  }
}

Result<MariaConnection> MariaConnection::connect(const nlohmann::json& params, std::string_view what,
                                                 unsigned read_timeout_s) {
  SKIPPR_TRY(check_maria_connection_params(params, what));
  DsnParts parts;
  if (has(params, "dsn")) parts = *parse_dsn(param_text(params["dsn"]));
  for (auto [name, field] : {std::pair{"host", &DsnParts::host},
                             {"port", &DsnParts::port},
                             {"user", &DsnParts::user},
                             {"password", &DsnParts::password},
                             {"database", &DsnParts::database}}) {
    if (has(params, name)) parts.*field = param_text(params[name]);
  }
  MYSQL* raw = mysql_init(nullptr);
  if (raw == nullptr) return fail(ErrorKind::kUnavailable, fmt::format("{}: out of memory connecting to MySQL", what));
  MariaConnection conn(raw, std::string(what), connection_secrets(params));
  const unsigned connect_timeout = 10;
  mysql_optionsv(raw, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_optionsv(raw, MYSQL_OPT_READ_TIMEOUT, &read_timeout_s);
  mysql_optionsv(raw, MYSQL_OPT_WRITE_TIMEOUT, &read_timeout_s);
  mysql_optionsv(raw, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_optionsv(raw, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
  mysql_optionsv(raw, MYSQL_OPT_CONNECT_ATTR_ADD, "program_name", "skipprd");
  const unsigned port = parts.port.empty() ? 3306 : static_cast<unsigned>(std::stoi(parts.port));
  const std::string host = parts.host.empty() ? "127.0.0.1" : parts.host;
  if (mysql_real_connect(raw, host.c_str(), parts.user.empty() ? nullptr : parts.user.c_str(), parts.password.c_str(),
                         parts.database.c_str(), port, nullptr, 0) == nullptr) {
    const unsigned number = mysql_errno(raw);
    const ErrorKind kind = maria_error_kind(number);
    const std::string message = redact(mysql_error(raw), conn.secrets_);
    return fail(kind,
                fmt::format("{}: cannot connect to MySQL at {}:{}: {} ({}). {}", what, host, port, message, number,
                            kind == ErrorKind::kConfig ? "Check dsn/host/port/user/password/database in skippr.yml"
                                                       : "Is the server running and reachable? The run is retried"));
  }
  return conn;
}

Error MariaConnection::error(std::string_view doing) {
  last_errno_ = mysql_errno(conn_.get());
  return Error{maria_error_kind(last_errno_),
               fmt::format("{}: {}: {} ({})", what_, doing, redact(mysql_error(conn_.get()), secrets_), last_errno_)};
}

Status MariaConnection::execute(std::string_view sql) {
  last_errno_ = 0;
  if (mysql_real_query(conn_.get(), sql.data(), sql.size()) != 0) {
    return std::unexpected(error(sql.size() > 200 ? sql.substr(0, 200) : sql));
  }
  // A statement that returns rows anyway (SHOW ...): read and drop them, or the connection is out of sync.
  if (MYSQL_RES* res = mysql_store_result(conn_.get())) mysql_free_result(res);
  return ok();
}

Result<MariaRows> MariaConnection::query(std::string_view sql) {
  last_errno_ = 0;
  if (mysql_real_query(conn_.get(), sql.data(), sql.size()) != 0) {
    return std::unexpected(error(sql.size() > 200 ? sql.substr(0, 200) : sql));
  }
  MYSQL_RES* res = mysql_store_result(conn_.get());
  if (res == nullptr) {
    if (mysql_field_count(conn_.get()) != 0) return std::unexpected(error("reading the rows"));
    return MariaRows{};
  }
  MariaRows out;
  const unsigned fields = mysql_num_fields(res);
  MYSQL_FIELD* meta = mysql_fetch_fields(res);
  for (unsigned i = 0; i < fields; ++i) out.names.emplace_back(meta[i].name);
  out.rows.reserve(mysql_num_rows(res));
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    const unsigned long* lengths = mysql_fetch_lengths(res);
    auto& values = out.rows.emplace_back();
    values.reserve(fields);
    for (unsigned i = 0; i < fields; ++i) {
      values.push_back(row[i] == nullptr ? std::nullopt : std::optional<std::string>(std::string(row[i], lengths[i])));
    }
  }
  mysql_free_result(res);
  return out;
}

std::string MariaConnection::quote(std::string_view text) {
  std::string out(text.size() * 2 + 3, '\0');
  const unsigned long n = mysql_real_escape_string(conn_.get(), out.data() + 1, text.data(), text.size());
  out[0] = '\'';
  out[n + 1] = '\'';
  out.resize(n + 2);
  return out;
}

std::string MariaConnection::server_version() const { return mysql_get_server_info(conn_.get()); }

bool MariaConnection::is_mariadb() const { return mariadb_connection(conn_.get()) != 0; }

std::string maria_quote_identifier(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out += '`';
    out += c;
  }
  out += '`';
  return out;
}

std::string maria_qualified(std::string_view schema, std::string_view table) {
  return maria_quote_identifier(schema) + "." + maria_quote_identifier(table);
}

void BinlogDump::RplCloser::operator()(st_mariadb_rpl* r) const { mariadb_rpl_close(r); }
void BinlogDump::EventFree::operator()(st_mariadb_rpl_event* e) const { mariadb_free_rpl_event(e); }

BinlogDump::~BinlogDump() {
  event_.reset();
  rpl_.reset();  // before the connection it reads from closes
}

Result<BinlogDump> BinlogDump::open(MariaConnection conn, const std::string& file, uint64_t offset, uint32_t server_id,
                                    double heartbeat_s, std::string_view what) {
  BinlogDump dump(std::move(conn), std::string(what));
  // The server sends its checksums (the connector checks and strips them), GTID events (MariaDB's capability 4),
  // and a heartbeat whenever it has had nothing to send for heartbeat_s.
  SKIPPR_TRY(dump.conn_.execute("SET @master_binlog_checksum = @@global.binlog_checksum"));
  auto checksum = dump.conn_.query("SELECT @@global.binlog_checksum");
  if (!checksum) return std::unexpected(checksum.error());
  dump.checksums_ = checksum->rows.at(0).at(0).value_or("NONE") != "NONE";
  if (dump.conn_.is_mariadb()) SKIPPR_TRY(dump.conn_.execute("SET @mariadb_slave_capability = 4"));
  SKIPPR_TRY(
      dump.conn_.execute(fmt::format("SET @master_heartbeat_period = {}", static_cast<uint64_t>(heartbeat_s * 1e9))));
  MARIADB_RPL* rpl = mariadb_rpl_init(dump.conn_.raw());
  if (rpl == nullptr) return fail(ErrorKind::kUnavailable, fmt::format("{}: cannot start reading the binlog", what));
  dump.rpl_.reset(rpl);
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_FILENAME, file.c_str(), file.size());
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_START, static_cast<unsigned long>(offset));
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_SERVER_ID, static_cast<unsigned int>(server_id));
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_VERIFY_CHECKSUM, 1);
  if (mariadb_rpl_open(rpl) != 0) {
    const unsigned number = mysql_errno(dump.conn_.raw());
    return fail(maria_error_kind(number), fmt::format("{}: cannot start reading the binlog at {}:{}: {} ({})", what,
                                                      file, offset, mysql_error(dump.conn_.raw()), number));
  }
  return dump;
}

std::pair<std::string, uint64_t> BinlogDump::rotation(const st_mariadb_rpl_event& event) const {
  // After the status byte: the 19-byte event header, the 8-byte position, the file name, perhaps a checksum.
  constexpr size_t kHeader = 19, kPosition = 8;
  const size_t start = event.raw_data_ofs + kHeader;
  if (event.raw_data_size < start + kPosition) return {"", 0};
  uint64_t position = 0;
  for (size_t i = kPosition; i > 0; --i) position = (position << 8) | event.raw_data[start + i - 1];
  size_t name_length = event.raw_data_size - start - kPosition;
  if (checksums_ && name_length >= 4) name_length -= 4;
  return {std::string(reinterpret_cast<const char*>(event.raw_data) + start + kPosition, name_length), position};
}

Result<const st_mariadb_rpl_event*> BinlogDump::next() {
  // On failure the connector frees the event it was handed: ownership passes to it for the call.
  MARIADB_RPL_EVENT* event = mariadb_rpl_fetch(rpl_.get(), event_.release());
  if (event == nullptr) {
    const unsigned number = mysql_errno(conn_.raw());
    std::string message = mysql_error(conn_.raw());
    if (message.empty()) message = mariadb_rpl_error(rpl_.get());
    if (message.empty()) message = "the server ended the binlog dump";
    return fail(number == ER_MASTER_FATAL_ERROR_READING_BINLOG ? ErrorKind::kConfig : ErrorKind::kUnavailable,
                fmt::format("{}: reading the binlog: {} ({})", what_, message, number));
  }
  event_.reset(event);
  return event;
}

}  // namespace skippr
