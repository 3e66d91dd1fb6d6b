#include "sources/mysql/mysql_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "clients/mariadb/maria_client.h"
#include "core/table_selection.h"
#include "sources/mysql/mysql_catalog.h"
#include "sources/mysql/mysql_cdc_source.h"

namespace skippr {
namespace {

constexpr size_t kEstimatedRowBytes = 200;  // only sizes the LIMIT of a poll
constexpr size_t kMaxRowsPerPoll = 50000;

enum class Mode { kIncremental, kSnapshot };

// One table's keyset read: ordered by (cursor, key) for incremental, by key for a snapshot.
struct TableRead {
  MyTable table;
  std::vector<std::string> after;
  bool done = false;  // snapshot: read to its end

  nlohmann::json position() const {
    nlohmann::json p = {{"after", after}};
    if (done) p["done"] = true;
    return p;
  }
  bool seek(const nlohmann::json& p) {
    after.clear();
    done = false;
    if (p.is_null()) return true;
    if (!p.is_object() || !p.contains("after") || !p["after"].is_array()) return false;
    after = p["after"].get<std::vector<std::string>>();
    done = p.value("done", false);
    return true;
  }
};

class MysqlSource final : public Source {
 public:
  MysqlSource(const ConnectorContext& ctx, TableSelection selection, Mode mode, std::string cursor)
      : params_(ctx.params),
        what_(fmt::format("source '{}'", ctx.name)),
        selection_(std::move(selection)),
        mode_(mode),
        cursor_(std::move(cursor)),
        key_(ctx.primary_key) {}

  Status open() override {
    SKIPPR_TRY(connect());
    auto tables = my_selected_tables(*conn_, selection_, key_, what_, "orders the read and breaks ties between rows");
    if (!tables) return std::unexpected(tables.error());
    tables_.clear();
    for (auto& table : *tables) {
      if (mode_ == Mode::kIncremental && !table.column(cursor_)) {
        return fail(ErrorKind::kConfig, fmt::format("{}: table {}.{} has no column {} (named as cursor_column); check "
                                                    "skippr.yml",
                                                    what_, table.schema, table.name, cursor_));
      }
      tables_.push_back(TableRead{std::move(table), {}, false});
    }
    return ok();
  }

  Status seek(const Position& position) override {
    std::vector<std::string> streams;
    for (const auto& read : tables_) streams.push_back(read.table.stream);
    auto parts = table_parts_of(position, names_streams(), streams);
    for (size_t t = 0; parts && t < tables_.size(); ++t) {
      if (!tables_[t].seek((*parts)[t])) parts.reset();
    }
    if (!parts) {
      return fail(ErrorKind::kCorruption, fmt::format("{}: unreadable resume position '{}'", what_, position.token));
    }
    return ok();
  }

  Result<Poll> poll(const Budget& budget) override {
    Poll result;
    if (!conn_) SKIPPR_TRY(connect());
    const size_t limit =
        std::clamp<size_t>(std::min(budget.max_rows, budget.max_bytes / kEstimatedRowBytes), 1, kMaxRowsPerPoll);
    result.drained = true;
    for (size_t tried = 0; tried < tables_.size() && result.drained; ++tried) {
      TableRead& read = tables_[current_];
      bool drained = true;
      if (!read.done) {
        Batch batch;
        batch.stream = read.table.stream;
        for (const auto& c : read.table.columns) batch.add_column({c.name, c.type});
        std::vector<std::string> ordering = read.table.key;
        std::vector<std::string> conditions;
        if (mode_ == Mode::kIncremental) {
          ordering.insert(ordering.begin(), cursor_);
          // A NULL cursor never compares, so such rows are left out of every poll alike (documented).
          conditions.push_back(maria_quote_identifier(cursor_) + " IS NOT NULL");
        }
        auto finished = my_read_page(*conn_, read.table, ordering, read.after, limit, conditions, batch,
                                     result.dead_letters, what_, nullptr);
        if (!finished) {
          if (finished.error().kind == ErrorKind::kUnavailable) conn_.reset();
          return std::unexpected(finished.error());
        }
        drained = *finished;
        if (drained && mode_ == Mode::kSnapshot) read.done = true;
        if (batch.rows > 0) {
          result.records = std::move(batch);
          result.drained = false;
        }
      }
      if (drained) current_ = (current_ + 1) % tables_.size();
    }
    result.position_after = position();
    return result;
  }

  bool resumes_from_destination() const override { return true; }
  bool names_streams() const override { return selection_.names_streams(); }

 private:
  Status connect() {
    auto conn = MariaConnection::connect(params_, what_);
    if (!conn) return std::unexpected(conn.error());
    conn_.emplace(std::move(*conn));
    return ok();
  }
  Position position() const {
    std::vector<std::pair<std::string, nlohmann::json>> parts;
    for (const auto& read : tables_) parts.emplace_back(read.table.stream, read.position());
    return table_parts_position(names_streams(), parts);
  }

  nlohmann::json params_;
  std::string what_;
  TableSelection selection_;
  Mode mode_;
  std::string cursor_;
  std::vector<std::string> key_;
  std::optional<MariaConnection> conn_;
  std::vector<TableRead> tables_;
  size_t current_ = 0;
};

std::string text_param(const nlohmann::json& p, const char* name) {
  return p.contains(name) && p[name].is_string() ? p[name].get<std::string>() : std::string();
}

}  // namespace

ConnectorSpec mysql_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "MySQL";
  spec.is_source = true;
  spec.summary =
      "MySQL or MariaDB tables, read incrementally by a cursor column, as a snapshot, or as a change stream "
      "from the binlog (CDC)";
  spec.params = maria_connection_params();
  add_table_reading_params(
      spec.params,
      "the tables to read: names (orders, shop.orders) and patterns (shop.*, order_*); a name without a database is "
      "in `database`; each table is a stream of its own when there are several",
      "from the binlog");
  spec.params.push_back({"server_id", ParamType::kInt, false, nullptr,
                         "CDC: the replica id the binlog is read as, unique among the server's replicas (default: "
                         "from a hash of the pipeline's name)"});
  spec.keys_streams = cdc_keys_streams;
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    const std::string what = fmt::format("source '{}'", ctx.name);
    SKIPPR_TRY(check_maria_connection_params(ctx.params, what));
    const auto& p = ctx.params;
    const std::string mode = p.value("mode", std::string("incremental"));
    const bool cdc = mode == "snapshot_then_cdc" || mode == "cdc_only";
    if (!cdc && mode != "incremental" && mode != "snapshot") {
      return fail(ErrorKind::kConfig, fmt::format("{}: unknown mode '{}'; use incremental, snapshot, "
                                                  "snapshot_then_cdc or cdc_only",
                                                  what, mode));
    }
    TableSelection selection{maria_database(p), p.value("tables", std::vector<std::string>{}),
                             p.value("exclude_tables", std::vector<std::string>{})};
    if (selection.include.empty()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: tables is empty; name a table, several, or a pattern such as shop.*", what));
    }
    if (selection.names_streams() && !ctx.primary_key.empty()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: several tables are read, each keyed by its own primary key; the pipeline's "
                              "primary_key names one table's, so remove it",
                              what));
    }
    if (p.contains("server_id") && !p["server_id"].is_null() &&
        (!p["server_id"].is_number_integer() || p["server_id"].get<int64_t>() < 1 ||
         p["server_id"].get<int64_t>() > 4294967295LL)) {
      return fail(ErrorKind::kConfig, fmt::format("{}: server_id must be a whole number from 1 to 4294967295, "
                                                  "unique among the server's replicas",
                                                  what));
    }
    if (cdc) {
      return make_mysql_cdc_source(ctx, std::move(selection),
                                   mode == "cdc_only" ? MyCdcMode::kCdcOnly : MyCdcMode::kSnapshotThenCdc);
    }
    const std::string cursor = text_param(p, "cursor_column");
    if (mode == "incremental" && cursor.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("{}: mode incremental needs cursor_column (a column that grows with "
                                                  "every change, e.g. updated_at); add it",
                                                  what));
    }
    return std::make_unique<MysqlSource>(ctx, std::move(selection),
                                         mode == "snapshot" ? Mode::kSnapshot : Mode::kIncremental, cursor);
  };
  return spec;
}

}  // namespace skippr
