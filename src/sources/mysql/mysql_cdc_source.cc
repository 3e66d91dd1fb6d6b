#include "sources/mysql/mysql_cdc_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mysql.h>  // before mariadb_rpl.h, which uses its types

#include <mariadb_rpl.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>

#include "clients/mariadb/maria_client.h"
#include "core/ascii.h"
#include "core/change_fields.h"
#include "core/reset_advice.h"
#include "sources/mysql/binlog_rows.h"
#include "sources/mysql/mysql_catalog.h"
#include "sources/mysql/mysql_cdc_position.h"

namespace skippr {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kEstimatedRowBytes = 200;  // only sizes the LIMIT of a snapshot page
constexpr size_t kMaxRowsPerPage = 50000;
constexpr auto kMaxPollTime = std::chrono::milliseconds(500);  // so the engine can cut batches by time
constexpr double kHeartbeatSeconds = 0.1;         // an idle dump sends one this often: how long a drained poll waits
constexpr unsigned kDumpReadTimeoutSeconds = 30;  // no event nor heartbeat for this long: the server is gone
constexpr size_t kMaxTransactionBudgets = 4;      // how far past its budget a poll reads on to a transaction's end

// The MySQL-compatible name of a binlog event's table, lowercased for comparison with a statement's text.
bool starts_with_word(std::string_view text, std::string_view word) {
  if (text.size() < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (ascii_lower(text[i]) != word[i]) return false;
  }
  return text.size() == word.size() ||
         !(std::isalnum(static_cast<unsigned char>(text[word.size()])) || text[word.size()] == '_');
}

std::string_view skip_space(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  return text;
}

// One identifier at the front of `text` (`quoted` or plain), consumed.
std::string take_identifier(std::string_view& text) {
  std::string out;
  text = skip_space(text);
  if (!text.empty() && text.front() == '`') {
    size_t i = 1;
    for (; i < text.size(); ++i) {
      if (text[i] == '`') {
        if (i + 1 < text.size() && text[i + 1] == '`') {
          out += '`';
          ++i;
          continue;
        }
        break;
      }
      out += text[i];
    }
    text.remove_prefix(std::min(text.size(), i + 1));
    return out;
  }
  size_t i = 0;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '$')) {
    out += text[i++];
  }
  text.remove_prefix(i);
  return out;
}

// The table a TRUNCATE [TABLE] [db.]name statement empties, as (schema, table); nullopt for any other statement.
std::optional<std::pair<std::string, std::string>> truncated_table(std::string_view statement,
                                                                   const std::string& default_db) {
  std::string_view s = skip_space(statement);
  if (!starts_with_word(s, "truncate")) return std::nullopt;
  s.remove_prefix(8);
  s = skip_space(s);
  if (starts_with_word(s, "table")) s.remove_prefix(5);
  std::string first = take_identifier(s);
  s = skip_space(s);
  if (!s.empty() && s.front() == '.') {
    s.remove_prefix(1);
    return std::pair{first, take_identifier(s)};
  }
  return std::pair{default_db, first};
}

bool is_ddl(std::string_view statement) {
  const std::string_view s = skip_space(statement);
  for (std::string_view word : {"alter", "create", "drop", "rename"}) {
    if (starts_with_word(s, word)) return true;
  }
  return false;
}

// A column the catalog no longer lists (dropped since the binlog event was written): its family from its binlog type.
MyColumn column_from_binlog(const BinlogColumn& b) {
  MyColumn c;
  c.name = b.name;
  c.column_type = "(from the binlog)";
  switch (b.type) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG:
    case MYSQL_TYPE_YEAR:
      c.family = MyFamily::kInt;
      c.type = Type::kInt64;
      break;
    case MYSQL_TYPE_FLOAT:
    case MYSQL_TYPE_DOUBLE:
      c.family = MyFamily::kDouble;
      c.type = Type::kDouble;
      break;
    case MYSQL_TYPE_DATE:
      c.family = MyFamily::kDate;
      c.type = Type::kDate;
      break;
    case MYSQL_TYPE_DATETIME2:
    case MYSQL_TYPE_TIMESTAMP2:
      c.family = MyFamily::kDateTime;
      c.type = Type::kTimestamp;
      break;
    case MYSQL_TYPE_GEOMETRY:
      c.family = MyFamily::kBinary;
      c.type = Type::kBinary;
      break;
    default:
      c.family = MyFamily::kText;
      c.type = Type::kString;
  }
  return c;
}

// MariaDB: the GTID position a binlog file and offset correspond to (BINLOG_GTID_POS); "" elsewhere.
std::string gtid_position_at(MariaConnection& conn, const std::string& file, uint64_t offset) {
  if (!conn.is_mariadb()) return "";
  auto at = conn.query(fmt::format("SELECT BINLOG_GTID_POS({}, {})", conn.quote(file), offset));
  return at && !at->rows.empty() ? at->rows[0].at(0).value_or("") : "";
}

struct CdcTable {
  MyTable table;
  bool stale = false;  // a DDL statement touched it: described again at its next table map
};

// A table map of a table the source reads, with what decoding and appending its rows needs.
struct MappedTable {
  size_t table = 0;  // index in tables_
  BinlogTableMap map;
  std::vector<bool> is_unsigned;   // per binlog column
  std::vector<MyColumn> columns;   // per binlog column: the catalog's (or one from the binlog type)
  std::vector<std::string> names;  // per binlog column
};

class MysqlCdcSource final : public Source {
 public:
  MysqlCdcSource(const ConnectorContext& ctx, TableSelection selection, MyCdcMode mode)
      : params_(ctx.params),
        what_(fmt::format("source '{}'", ctx.name)),
        pipeline_(ctx.pipeline),
        selection_(std::move(selection)),
        per_table_(selection_.names_streams()),
        mode_(mode),
        merge_(ctx.landing == Landing::kMergeByKey),
        key_(ctx.primary_key) {
    server_id_ = ctx.params.contains("server_id") && ctx.params["server_id"].is_number_integer()
                     ? static_cast<uint32_t>(ctx.params["server_id"].get<int64_t>())
                     : mysql_default_server_id(ctx.pipeline);
  }

  Status open() override;
  Status seek(const Position& position) override;
  Result<Poll> poll(const Budget& budget) override;
  bool streaming() const override { return true; }
  bool names_streams() const override { return per_table_; }
  bool resumes_from_destination() const override { return true; }

 private:
  Result<MariaConnection*> sql();
  Status check_server(MariaConnection& conn);
  Status check_grants(MariaConnection& conn);
  Status check_on_server(const std::string& file, uint64_t offset);
  Status begin_snapshot(bool fresh);
  Result<Poll> poll_snapshot(const Budget& budget);
  Result<Poll> poll_stream(const Budget& budget);
  Status handle_rows(const MARIADB_RPL_EVENT& e, Poll& result);
  // One change of a mapped table into its part of `result` (or skipped, when the position covers it).
  Status append_change(const MappedTable& mapped, const char* op, std::vector<std::optional<std::string>>& values,
                       Poll& result);
  Status handle_statement(const MARIADB_RPL_EVENT& e, Poll& result);
  Status on_table_map(const MARIADB_RPL_EVENT& e);
  void begin_transaction(uint64_t offset, std::string gtid, bool standalone);
  void end_transaction(uint64_t next_offset);
  bool skipping() const;
  Batch& part_of(Poll& result, size_t t);
  std::string token() const { return change_order_token(binlog_order_position(file_, tx_offset_), tx_index_ + 1); }
  Error purged(const std::string& file) const;

  nlohmann::json params_;
  std::string what_, pipeline_;
  TableSelection selection_;
  bool per_table_;
  MyCdcMode mode_;
  bool merge_;
  std::vector<std::string> key_;
  uint32_t server_id_ = 0;
  std::vector<CdcTable> tables_;

  std::optional<MariaConnection> sql_;       // catalog reads and checks
  std::optional<MariaConnection> snapshot_;  // the snapshot phase's consistent-snapshot transaction
  std::optional<BinlogDump> dump_;
  std::unordered_map<uint64_t, MappedTable> maps_;  // by table id: the tables read
  MyCdcPosition pos_;

  // The binlog being read.
  std::string file_;  // the file the dump is in
  bool in_tx_ = false;
  bool standalone_ = false;  // a transaction of one statement with no COMMIT after it (DDL)
  uint64_t tx_offset_ = 0;   // where the transaction being read starts in file_
  uint64_t tx_index_ = 0;    // changes of it read so far
  std::string tx_gtid_;
  uint64_t skip_ = 0;  // changes of the transaction at the resume offset already delivered
  std::string skip_file_;
  uint64_t skip_offset_ = 0;
  size_t poll_bytes_ = 0;
  size_t poll_rows_ = 0;
  bool fresh_ = false;  // cdc_only from the server's current position: kept by the first poll
  // The server's binlog end when the dump began (binlog_order_position): a poll reports drained only past it, so a
  // --once run reads everything committed before it started.
  uint64_t catch_up_ = 0;
  bool caught_up_ = false;  // the first transaction boundary past catch_up_ was reported drained
  unsigned dump_last_errno_ = 0;
};

Result<MariaConnection*> MysqlCdcSource::sql() {
  if (!sql_) {
    auto conn = MariaConnection::connect(params_, what_);
    if (!conn) return std::unexpected(conn.error());
    sql_.emplace(std::move(*conn));
  }
  return &*sql_;
}

Status MysqlCdcSource::check_server(MariaConnection& conn) {
  auto settings = conn.query("SELECT @@log_bin, @@binlog_format, @@binlog_row_image");
  if (!settings) return std::unexpected(settings.error());
  const auto& row = settings->rows.at(0);
  auto setting_error = [&](std::string_view name, std::string_view value, std::string_view want, std::string_view why) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: the server has {} = {}; CDC needs {} = {} ({}). Set it in the server's configuration "
                            "(my.cnf: {} = {}) and restart it, or SET GLOBAL {} = '{}' for the sessions that start "
                            "after",
                            what_, name, value, name, want, why, name, want, name, want));
  };
  if (row[0].value_or("0") != "1") {
    return fail(ErrorKind::kConfig, fmt::format("{}: the server does not write a binlog (log_bin is OFF), which CDC "
                                                "reads; start it with log_bin (my.cnf: log_bin = mysql-bin) and "
                                                "server_id set",
                                                what_));
  }
  if (row[1].value_or("") != "ROW") {
    return setting_error("binlog_format", row[1].value_or(""), "ROW", "the changed rows themselves, not statements");
  }
  if (row[2].value_or("") != "FULL") {
    return setting_error("binlog_row_image", row[2].value_or(""), "FULL", "every column of every changed row");
  }
  auto metadata = conn.query("SELECT @@binlog_row_metadata");
  if (!metadata) {
    return fail(ErrorKind::kConfig, fmt::format("{}: the server has no binlog_row_metadata (MariaDB 10.5+ and MySQL "
                                                "8.0.1+ have it); CDC needs a server that logs column names with "
                                                "each change",
                                                what_));
  }
  if (metadata->rows.at(0).at(0).value_or("") != "FULL") {
    return setting_error("binlog_row_metadata", metadata->rows.at(0).at(0).value_or(""), "FULL",
                         "column names with each change, so a column added or dropped mid-stream lands right");
  }
  // MariaDB's compressed row events are not read (yet): refused rather than passed over.
  if (auto compress = conn.query("SELECT @@log_bin_compress");
      compress && !compress->rows.empty() && compress->rows[0].at(0).value_or("0") == "1") {
    return setting_error("log_bin_compress", "ON", "OFF", "uncompressed row events, the ones skipprd reads");
  }
  return ok();
}

Status MysqlCdcSource::check_grants(MariaConnection& conn) {
  auto user = conn.query("SELECT CURRENT_USER()");
  if (!user) return std::unexpected(user.error());
  const std::string current = user->rows.at(0).at(0).value_or("");
  auto grants = conn.query("SHOW GRANTS FOR CURRENT_USER()");
  if (!grants) return std::unexpected(grants.error());
  std::string global;
  for (const auto& row : grants->rows) {
    const std::string line = ascii_uppercase(row.at(0).value_or(""));
    if (line.find(" ON *.* ") != std::string::npos) global += line;
  }
  const bool all = global.find("ALL PRIVILEGES") != std::string::npos || global.find("SUPER") != std::string::npos;
  std::vector<std::string> missing;
  if (!all && global.find("REPLICATION SLAVE") == std::string::npos &&
      global.find("REPLICATION REPLICA") == std::string::npos) {
    missing.push_back("REPLICATION SLAVE");
  }
  if (!all && global.find("REPLICATION CLIENT") == std::string::npos &&
      global.find("BINLOG MONITOR") == std::string::npos) {
    missing.push_back("REPLICATION CLIENT");
  }
  if (!missing.empty()) {
    const auto at = current.find('@');
    const std::string grantee =
        at == std::string::npos ? current : fmt::format("'{}'@'{}'", current.substr(0, at), current.substr(at + 1));
    return fail(ErrorKind::kConfig,
                fmt::format("{}: user {} lacks {}, which CDC needs to read the binlog; run GRANT {} ON *.* TO {}",
                            what_, grantee, fmt::join(missing, " and "), fmt::join(missing, ", "), grantee));
  }
  for (const auto& t : tables_) {
    if (auto probe = conn.query(fmt::format("SELECT 1 FROM {} LIMIT 0", t.table.qualified)); !probe) {
      return fail(probe.error().kind,
                  fmt::format("{}: cannot read {}.{} ({}); GRANT SELECT ON {} TO {}", what_, t.table.schema,
                              t.table.name, probe.error().message, t.table.qualified, current));
    }
  }
  return ok();
}

Status MysqlCdcSource::open() {
  auto conn = sql();
  if (!conn) return std::unexpected(conn.error());
  SKIPPR_TRY(check_server(**conn));
  auto tables =
      my_selected_tables(**conn, selection_, key_, what_, "keys its changes (merge_by_key) and orders its snapshot");
  if (!tables) return std::unexpected(tables.error());
  tables_.clear();
  for (auto& table : *tables) tables_.push_back(CdcTable{std::move(table), false});
  SKIPPR_TRY(check_grants(**conn));
  if (per_table_) {
    spdlog::info("{}: {} table{} from the binlog as replica {}", what_, tables_.size(), tables_.size() == 1 ? "" : "s",
                 server_id_);
  }
  return ok();
}

Error MysqlCdcSource::purged(const std::string& file) const {
  return Error{ErrorKind::kConfig,
               fmt::format("{}: binlog file {} is no longer on the server (purged, by binlog_expire_logs_seconds or "
                           "PURGE BINARY LOGS, before this pipeline read it), so the changes since are lost to it; {}. "
                           "Keep binlogs longer than a pipeline may stand still",
                           what_, file, reset_advice(pipeline_))};
}

Status MysqlCdcSource::check_on_server(const std::string& file, uint64_t offset) {
  auto conn = sql();
  if (!conn) return std::unexpected(conn.error());
  auto logs = (*conn)->query("SHOW BINARY LOGS");
  if (!logs) return std::unexpected(logs.error());
  for (const auto& row : logs->rows) {
    if (row.at(0).value_or("") != file) continue;
    const uint64_t size = std::stoull(row.at(1).value_or("0"));
    if (offset > size) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: the position {}:{} is past the end of that binlog file ({} bytes): the server's "
                              "binlog is not the one this pipeline read (a restored or replaced server?); {}",
                              what_, file, offset, size, reset_advice(pipeline_)));
    }
    return ok();
  }
  return std::unexpected(purged(file));
}

Status MysqlCdcSource::seek(const Position& position) {
  dump_.reset();
  snapshot_.reset();
  maps_.clear();
  in_tx_ = false;
  if (position.empty()) {
    pos_ = MyCdcPosition{};
    if (mode_ == MyCdcMode::kSnapshotThenCdc) {
      pos_.snapshot = true;
      for (const auto& t : tables_) pos_.tables[t.table.stream] = MyTableProgress{false, {}};
      return begin_snapshot(/*fresh=*/true);
    }
    auto conn = sql();
    if (!conn) return std::unexpected(conn.error());
    auto status = (*conn)->query("SHOW MASTER STATUS");
    if (!status) return std::unexpected(status.error());
    if (status->rows.empty()) return fail(ErrorKind::kConfig, fmt::format("{}: the server names no binlog", what_));
    pos_.file = status->rows[0].at(0).value_or("");
    pos_.offset = std::stoull(status->rows[0].at(1).value_or("4"));
    pos_.gtid = gtid_position_at(**conn, pos_.file, pos_.offset);
    for (const auto& t : tables_) pos_.tables[t.table.stream] = MyTableProgress{};
    fresh_ = true;
    return ok();
  }
  auto parsed = MyCdcPosition::parse(position);
  if (!parsed) return std::unexpected(Error{parsed.error().kind, what_ + ": " + parsed.error().message});
  pos_ = std::move(*parsed);
  // A table `tables` gained since the position was written: its changes from here on (its rows so far are not read;
  // RESYNC of one table is not there yet for this source).
  for (const auto& t : tables_) {
    if (!pos_.tables.contains(t.table.stream)) {
      spdlog::warn("{}: table {}.{} is new in tables: its changes are read from here on, its existing rows are not",
                   what_, t.table.schema, t.table.name);
      pos_.tables[t.table.stream] = MyTableProgress{};
    }
  }
  std::erase_if(pos_.tables, [&](const auto& entry) {
    return std::ranges::none_of(tables_, [&](const CdcTable& t) { return t.table.stream == entry.first; });
  });
  SKIPPR_TRY(check_on_server(pos_.file, pos_.offset));
  if (pos_.snapshot) return begin_snapshot(/*fresh=*/false);
  return ok();
}

Status MysqlCdcSource::begin_snapshot(bool fresh) {
  auto conn = MariaConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  snapshot_.emplace(std::move(*conn));
  SKIPPR_TRY(snapshot_->execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"));
  if (snapshot_->is_mariadb()) {
    // MariaDB names the binlog position of a consistent snapshot itself: no lock at all.
    SKIPPR_TRY(snapshot_->execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"));
    if (!fresh) return ok();
    auto at = snapshot_->query("SHOW STATUS LIKE 'binlog_snapshot_%'");
    if (!at) return std::unexpected(at.error());
    for (const auto& row : at->rows) {
      const std::string name = ascii_lowercase(row.at(0).value_or(""));
      if (name == "binlog_snapshot_file") pos_.file = row.at(1).value_or("");
      if (name == "binlog_snapshot_position") pos_.offset = std::stoull(row.at(1).value_or("0"));
    }
  } else {
    // MySQL: the position read under a global read lock held only while the snapshot starts (it needs RELOAD).
    if (fresh) SKIPPR_TRY(snapshot_->execute("FLUSH TABLES WITH READ LOCK"));
    SKIPPR_TRY(snapshot_->execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"));
    if (fresh) {
      auto at = snapshot_->query("SHOW MASTER STATUS");
      (void)snapshot_->execute("UNLOCK TABLES");
      if (!at) return std::unexpected(at.error());
      if (at->rows.empty()) return fail(ErrorKind::kConfig, fmt::format("{}: the server names no binlog", what_));
      pos_.file = at->rows[0].at(0).value_or("");
      pos_.offset = std::stoull(at->rows[0].at(1).value_or("4"));
    }
  }
  if (pos_.file.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: the server gave no binlog position for the snapshot", what_));
  }
  if (fresh) {
    pos_.gtid = gtid_position_at(*snapshot_, pos_.file, pos_.offset);
    spdlog::info("{}: snapshot at binlog {}:{}{}", what_, pos_.file, pos_.offset,
                 pos_.gtid.empty() ? "" : " (GTID " + pos_.gtid + ")");
  }
  return ok();
}

Batch& MysqlCdcSource::part_of(Poll& result, size_t t) {
  const MyTable& table = tables_[t].table;
  auto is_part = [&](const Batch& b) { return !b.columns.empty() && b.stream == table.stream; };
  if (is_part(result.records)) return result.records;
  for (auto& other : result.other_streams) {
    if (is_part(other)) return other;
  }
  Batch& part = result.records.columns.empty() ? result.records : result.other_streams.emplace_back();
  part.stream = table.stream;
  if (per_table_) part.key = table.key;
  for (const auto& c : table.columns) part.add_column({c.name, c.type});
  add_change_fields(part);
  return part;
}

Result<Poll> MysqlCdcSource::poll(const Budget& budget) {
  if (pos_.snapshot) return poll_snapshot(budget);
  return poll_stream(budget);
}

Result<Poll> MysqlCdcSource::poll_snapshot(const Budget& budget) {
  Poll result;
  if (!snapshot_) SKIPPR_TRY(begin_snapshot(/*fresh=*/false));
  const size_t limit =
      std::clamp<size_t>(std::min(budget.max_rows, budget.max_bytes / kEstimatedRowBytes), 1, kMaxRowsPerPage);
  const std::string token = change_order_token(binlog_order_position(pos_.file, pos_.offset), 0);
  for (size_t t = 0; t < tables_.size(); ++t) {
    MyTableProgress& progress = pos_.tables[tables_[t].table.stream];
    if (progress.done) continue;
    Batch& batch = part_of(result, t);
    const size_t op = static_cast<size_t>(batch.schema.index_of(kOpField));
    const size_t order = static_cast<size_t>(batch.schema.index_of(kOrderField));
    auto finished = my_read_page(*snapshot_, tables_[t].table, tables_[t].table.key, progress.after, limit, {}, batch,
                                 result.dead_letters, what_, [&](Batch& b) {
                                   b.columns[op].append_string("insert");
                                   b.columns[order].append_string(token);
                                 });
    if (!finished) {
      snapshot_.reset();
      return std::unexpected(finished.error());
    }
    if (*finished) {
      progress.done = true;
      progress.after.clear();
      if (merge_) append_truncate_row(batch, token);
    }
    break;  // one table per poll
  }
  if (std::ranges::all_of(pos_.tables, [](const auto& e) { return e.second.done; })) {
    pos_.snapshot = false;  // the stream starts at the snapshot's position
    snapshot_.reset();
    result.keep_position = true;
    spdlog::info("{}: snapshot read; streaming from binlog {}:{}", what_, pos_.file, pos_.offset);
  }
  result.position_after = pos_.to_position();
  return result;
}

void MysqlCdcSource::begin_transaction(uint64_t offset, std::string gtid, bool standalone) {
  in_tx_ = true;
  standalone_ = standalone;
  tx_offset_ = offset;
  tx_index_ = 0;
  tx_gtid_ = std::move(gtid);
}

void MysqlCdcSource::end_transaction(uint64_t next_offset) {
  in_tx_ = false;
  pos_.file = file_;
  pos_.offset = next_offset;
  pos_.index = 0;
  if (!tx_gtid_.empty()) pos_.gtid = gtid_position_with(pos_.gtid, tx_gtid_);
  skip_ = 0;
}

bool MysqlCdcSource::skipping() const {
  return skip_ > 0 && file_ == skip_file_ && tx_offset_ == skip_offset_ && tx_index_ < skip_;
}

Status MysqlCdcSource::on_table_map(const MARIADB_RPL_EVENT& e) {
  auto map = binlog_table_map(e);
  if (!map) return std::unexpected(Error{map.error().kind, what_ + ": " + map.error().message});
  auto found = std::ranges::find_if(
      tables_, [&](const CdcTable& t) { return t.table.schema == map->schema && t.table.name == map->table; });
  if (found == tables_.end()) {
    maps_.erase(map->table_id);
    return ok();
  }
  if (!map->has_names) {
    return fail(ErrorKind::kConfig, fmt::format("{}: the binlog names no columns for {}.{}; set binlog_row_metadata = "
                                                "FULL on the server",
                                                what_, map->schema, map->table));
  }
  CdcTable& table = *found;
  if (table.stale) {
    auto conn = sql();
    if (!conn) return std::unexpected(conn.error());
    auto key = table.table.key;
    if (auto described = my_describe_table(**conn, table.table, key, what_, "keys its changes"); !described) {
      sql_.reset();
      return described;
    }
    table.stale = false;
  }
  MappedTable mapped;
  mapped.table = static_cast<size_t>(found - tables_.begin());
  for (const auto& b : map->columns) {
    const MyColumn* c = table.table.column(b.name);
    mapped.columns.push_back(c ? *c : column_from_binlog(b));
    mapped.names.push_back(b.name);
    mapped.is_unsigned.push_back(c && c->is_unsigned);
  }
  mapped.map = std::move(*map);
  maps_[mapped.map.table_id] = std::move(mapped);
  return ok();
}

Status MysqlCdcSource::handle_rows(const MARIADB_RPL_EVENT& e, Poll& result) {
  const auto& rows = e.event.rows;
  auto found = maps_.find(rows.table_id);
  if (found == maps_.end()) return ok();
  const MappedTable& mapped = found->second;
  const MyTable& table = tables_[mapped.table].table;
  const char* op = rows.type == 0 ? "insert" : rows.type == 1 ? "update" : "delete";
  const auto* p = static_cast<const unsigned char*>(rows.row_data);
  const unsigned char* end = p + rows.row_data_size;
  std::vector<std::optional<std::string>> values, after;
  const std::vector<std::string>& names = mapped.names;
  while (p < end) {
    auto decoded = decode_row_image(mapped.map, rows.column_bitmap, mapped.is_unsigned, p, end, values);
    if (!decoded) return std::unexpected(Error{ErrorKind::kBadInput, what_ + ": " + decoded.error().message});
    if (rows.type == 1) {
      const unsigned char* bitmap = rows.column_update_bitmap ? rows.column_update_bitmap : rows.column_bitmap;
      decoded = decode_row_image(mapped.map, bitmap, mapped.is_unsigned, p, end, after);
      if (!decoded) return std::unexpected(Error{ErrorKind::kBadInput, what_ + ": " + decoded.error().message});
      // An update that changes the key moves the row: the old key is deleted (its own change), then the new one set.
      bool key_changed = false;
      for (size_t i = 0; i < names.size(); ++i) {
        if (table.column(names[i]) && std::ranges::find(table.key, names[i]) != table.key.end() &&
            values[i] != after[i]) {
          key_changed = true;
        }
      }
      if (key_changed) SKIPPR_TRY(append_change(mapped, "delete", values, result));
      values.swap(after);
    }
    SKIPPR_TRY(append_change(mapped, op, values, result));
  }
  return ok();
}

Status MysqlCdcSource::append_change(const MappedTable& mapped, const char* op,
                                     std::vector<std::optional<std::string>>& values, Poll& result) {
  const MyTable& table = tables_[mapped.table].table;
  const std::vector<std::string>& names = mapped.names;
  {
    if (skipping()) {
      ++tx_index_;
      return ok();
    }
    Batch& batch = part_of(result, mapped.table);
    const std::string key = my_row_key(table, names, values);
    std::vector<bool> filled(batch.columns.size(), false);
    for (size_t i = 0; i < values.size(); ++i) {
      const MyColumn& column = mapped.columns[i];
      int at = batch.schema.index_of(column.name);
      if (at < 0) {  // a column added since the batch began (additive evolution): NULL in the rows before
        batch.add_column({column.name, column.type});
        filled.push_back(false);
        at = static_cast<int>(batch.columns.size()) - 1;
      }
      if (batch.columns[static_cast<size_t>(at)].type != column.type) {
        return fail(ErrorKind::kConfig,
                    fmt::format("{}: column {} of {}.{} changed type mid-stream ({} in this batch, {} now); re-read "
                                "the table: {}",
                                what_, column.name, table.schema, table.name,
                                to_string(batch.columns[static_cast<size_t>(at)].type), to_string(column.type),
                                reset_advice(pipeline_)));
      }
      std::optional<std::string> value = std::move(values[i]);
      if (value && column.fixed_binary_length > value->size()) value->resize(column.fixed_binary_length, '\0');
      if (value) poll_bytes_ += value->size();
      SKIPPR_TRY(my_append_value(batch.columns[static_cast<size_t>(at)], column, value, table, what_,
                                 result.dead_letters, key));
      filled[static_cast<size_t>(at)] = true;
    }
    const int op_at = batch.schema.index_of(kOpField), order_at = batch.schema.index_of(kOrderField);
    for (size_t c = 0; c < batch.columns.size(); ++c) {
      if (static_cast<int>(c) == op_at) {
        batch.columns[c].append_string(op);
      } else if (static_cast<int>(c) == order_at) {
        batch.columns[c].append_string(token());
      } else if (!filled[c]) {
        batch.columns[c].append_null();  // a column dropped since (or outside the image)
      }
    }
    batch.rows += 1;
    poll_rows_ += 1;
    ++tx_index_;
  }
  return ok();
}

Status MysqlCdcSource::handle_statement(const MARIADB_RPL_EVENT& e, Poll& result) {
  const auto& q = e.event.query;
  const std::string_view statement(q.statement.str, q.statement.length);
  const std::string db(q.database.str, q.database.length);
  if (auto truncated = truncated_table(statement, db)) {
    for (size_t t = 0; t < tables_.size(); ++t) {
      if (tables_[t].table.schema != truncated->first || tables_[t].table.name != truncated->second) continue;
      if (skipping()) {
        ++tx_index_;
        continue;
      }
      append_truncate_row(part_of(result, t), token());
      poll_rows_ += 1;
      ++tx_index_;
    }
    return ok();
  }
  if (is_ddl(statement)) {
    // Whichever table it names is described again at its next table map (cheap: DDL is rare).
    for (auto& t : tables_) t.stale = true;
  }
  return ok();
}

Result<Poll> MysqlCdcSource::poll_stream(const Budget& budget) {
  if (!dump_) {
    auto conn = MariaConnection::connect(params_, what_, kDumpReadTimeoutSeconds);
    if (!conn) return std::unexpected(conn.error());
    auto dump = BinlogDump::open(std::move(*conn), pos_.file, pos_.offset, server_id_, kHeartbeatSeconds, what_);
    if (!dump) return std::unexpected(dump.error());
    dump_.emplace(std::move(*dump));
    catch_up_ = 0;
    caught_up_ = false;
    if (auto conn = sql(); conn) {
      if (auto status = (*conn)->query("SHOW MASTER STATUS"); status && !status->rows.empty()) {
        catch_up_ =
            binlog_order_position(status->rows[0].at(0).value_or(""), std::stoull(status->rows[0].at(1).value_or("0")));
      } else {
        sql_.reset();
      }
    }
    file_ = pos_.file;
    in_tx_ = false;
    maps_.clear();
    skip_ = pos_.index;
    skip_file_ = pos_.file;
    skip_offset_ = pos_.offset;
  }
  Poll result;
  const MyCdcPosition start = pos_;
  const auto started = Clock::now();
  poll_rows_ = 0;
  poll_bytes_ = 0;
  if (fresh_) {
    result.keep_position = true;  // cdc_only's first position is where it starts: kept even if nothing comes
    fresh_ = false;
  }
  auto stop = [&](const Error& error) -> Result<Poll> {
    dump_.reset();
    pos_ = start;
    in_tx_ = false;
    // 1236 is every refusal of a dump; only a missing file is a purge (a server_id in use, a packet too large, ...
    // keep the server's own words).
    if (error.kind == ErrorKind::kConfig && dump_last_errno_ == 1236 &&
        (error.message.find("Could not find first log file") != std::string::npos ||
         error.message.find("purged") != std::string::npos)) {
      return std::unexpected(purged(start.file));
    }
    return std::unexpected(error);
  };
  for (;;) {
    auto next = dump_->next();
    if (!next) {
      dump_last_errno_ = dump_->last_errno();
      return stop(next.error());
    }
    const MARIADB_RPL_EVENT& e = **next;
    const uint64_t event_start = e.next_event_pos >= e.event_length ? e.next_event_pos - e.event_length : 0;
    Status handled = ok();
    switch (e.event_type) {
      case ROTATE_EVENT: {
        auto [file, offset] = dump_->rotation(e);
        if (file.empty()) return stop(Error{ErrorKind::kUnavailable, what_ + ": an unreadable ROTATE event"});
        file_ = std::move(file);
        if (!in_tx_) {
          pos_.file = file_;
          pos_.offset = offset;
          pos_.index = 0;
        }
        break;
      }
      case GTID_EVENT:
        begin_transaction(event_start,
                          fmt::format("{}-{}-{}", e.event.gtid.domain_id, e.server_id, e.event.gtid.sequence_nr),
                          (e.event.gtid.flags & FL_STANDALONE) != 0);
        break;
      case QUERY_EVENT: {
        const std::string_view statement(e.event.query.statement.str, e.event.query.statement.length);
        if (starts_with_word(skip_space(statement), "begin")) {
          if (!in_tx_) begin_transaction(event_start, "", false);
        } else if (starts_with_word(skip_space(statement), "commit") ||
                   starts_with_word(skip_space(statement), "rollback")) {
          // ROLLBACK ends a group whose non-transactional changes happened anyway (they are logged for that).
          if (in_tx_) end_transaction(e.next_event_pos);
        } else {
          if (!in_tx_) begin_transaction(event_start, "", true);
          handled = handle_statement(e, result);
          if (handled && standalone_) end_transaction(e.next_event_pos);
        }
        break;
      }
      case TABLE_MAP_EVENT:
        handled = on_table_map(e);
        break;
      case WRITE_ROWS_EVENT_V1:
      case UPDATE_ROWS_EVENT_V1:
      case DELETE_ROWS_EVENT_V1:
      case WRITE_ROWS_EVENT:
      case UPDATE_ROWS_EVENT:
      case DELETE_ROWS_EVENT:
        handled = handle_rows(e, result);
        break;
      case XID_EVENT:
        if (in_tx_) end_transaction(e.next_event_pos);
        break;
      case HEARTBEAT_LOG_EVENT:
        // The server had nothing to send: drained, once the dump has passed where the binlog ended at its start.
        if (!in_tx_ && binlog_order_position(file_, e.next_event_pos) >= catch_up_) result.drained = true;
        break;
      default:
        break;
    }
    if (!handled) return stop(handled.error());
    const bool over_time = Clock::now() - started > kMaxPollTime;
    // Everything the binlog held when the dump began is read: drained once (a --once run ends here even while the
    // server keeps writing, when no idle moment brings a heartbeat).
    if (!in_tx_ && !caught_up_ && binlog_order_position(pos_.file, pos_.offset) >= catch_up_) {
      caught_up_ = true;
      result.drained = true;
    }
    if (!in_tx_) {
      if (result.drained || over_time || poll_rows_ >= budget.max_rows || poll_bytes_ >= budget.max_bytes) break;
      continue;
    }
    // Inside a transaction: read on to its end, but not without bound; then the batch holds part of it, and the
    // position how many of its changes.
    // (batch_bytes, not max_bytes: the room left in a nearly full batch would split every transaction.)
    if (poll_rows_ >= kMaxTransactionBudgets * budget.max_rows ||
        poll_bytes_ >= kMaxTransactionBudgets * budget.batch_bytes) {
      pos_.file = file_;
      pos_.offset = tx_offset_;
      pos_.index = tx_index_;
      skip_ = 0;
      break;
    }
  }
  result.position_after = pos_.to_position();
  return result;
}

}  // namespace

uint32_t mysql_default_server_id(std::string_view pipeline) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : pipeline) h = (h ^ c) * 16777619u;
  return 1000000u + h % (0x7fffffffu - 1000000u);
}

Result<std::unique_ptr<Source>> make_mysql_cdc_source(const ConnectorContext& ctx, TableSelection selection,
                                                      MyCdcMode mode) {
  return std::make_unique<MysqlCdcSource>(ctx, std::move(selection), mode);
}

}  // namespace skippr
