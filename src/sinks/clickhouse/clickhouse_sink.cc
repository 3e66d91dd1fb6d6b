#include "sinks/clickhouse/clickhouse_sink.h"

#include <fmt/format.h>

#include <charconv>

#include "clients/clickhouse/clickhouse_client.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "sinks/clickhouse/ch_types.h"
#include "sinks/kit/conform_batch.h"
#include "sinks/kit/per_batch_sink.h"
#include "sinks/kit/schema_evolution.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

constexpr std::string_view kDefaultEngine = "ReplacingMergeTree ORDER BY (_skippr_batch_id, _skippr_row)";
constexpr std::string_view kBatchIdColumn = "_skippr_batch_id";
constexpr std::string_view kRowColumn = "_skippr_row";

ColumnRules ch_column_rules() {
  return {[](std::string_view a, std::string_view b) { return a == b; }, ch_column_accepts, ch_quote_identifier,
          ch_int_range};
}

uint64_t parse_count(std::string_view text) {
  uint64_t n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

// `{database}` and `{table}` in the engine clause (a ReplicatedMergeTree path) become the sink's own.
std::string engine_clause(std::string engine, const std::string& database, const std::string& table) {
  for (auto [key, value] :
       {std::pair{std::string_view("{database}"), database}, std::pair{std::string_view("{table}"), table}}) {
    for (size_t at = engine.find(key); at != std::string::npos; at = engine.find(key, at + value.size())) {
      engine.replace(at, key.size(), value);
    }
  }
  return engine;
}

class ClickHouseSink final : public PerBatchSink {
 public:
  // `tables` says where each stream lands (one table, or a {stream} pattern: sinks/kit/stream_tables.h). Each table
  // is its own: a batch of several streams lands one table after another (ClickHouse has no transaction across
  // tables), each part deduplicated by its rows' batch id as a batch of one stream is.
  ClickHouseSink(ClickHouseConfig config, std::string database, StreamTables tables, std::string engine)
      : client_(std::move(config)),
        database_(std::move(database)),
        tables_(std::move(tables)),
        table_(tables_.pattern()),
        engine_(std::move(engine)) {}

  Guarantee guarantee() const override { return Guarantee::kAtLeastOnce; }
  Status open() override;
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override {
    // Every part's table is claimed before any part lands: two streams that would share a table stop the batch
    // whole, as a transaction would, rather than after the first of them landed.
    for (const auto& item : group) {
      SKIPPR_TRY(tables_.claim(item.batch.stream, tables_.table_for(item.batch.stream), same_name));
    }
    return PerBatchSink::write_group(group);
  }

 private:
  std::string target() const { return ch_quote_identifier(database_) + "." + ch_quote_identifier(table_); }
  std::string rejects() const {
    return ch_quote_identifier(database_) + "." + ch_quote_identifier(table_ + std::string(kRejectedSuffix));
  }
  std::string where() const { return fmt::format("{}: table {}.{}", client_.where(), database_, table_); }
  Result<std::vector<TableColumn>> describe();
  // Points table_ (and what is known of it) at the table `batch`'s stream lands in.
  Status use_table_of(const Batch& batch);
  Status prepare_table(const Batch& batch);
  Result<WriteOutcome> land(const BatchToLand& item) override;
  // How many distinct rows of batch `id` the target holds.
  Result<uint64_t> rows_there(const BatchId& id);
  Status write_rejects(const BatchId& id, const std::vector<RejectedRow>& rows);

  ClickHouseClient client_;
  std::string database_;
  StreamTables tables_;
  std::string table_;   // the table being landed in (use_table_of)
  std::string engine_;  // as configured: {table} is each table's
  bool has_datetime64_ = false;
  bool has_dedup_token_ = false;
  // What is known of table_: its columns as last described (empty: not there yet), whether its rejects table is made.
  struct TableState {
    std::vector<TableColumn> columns;
    bool rejects_ready = false;
  };
  TableState known_;
  KnownPerTable<TableState> other_tables_;  // the same of the stream tables other than table_
  std::string encoded_;                     // reused across batches
};

Status ClickHouseSink::open() {
  SKIPPR_TRY(client_.query("SELECT 1"));
  auto databases =
      client_.query(fmt::format("SELECT count() FROM system.databases WHERE name = {}", ch_quote_literal(database_)));
  if (!databases) return std::unexpected(databases.error());
  if (parse_count(*databases) == 0) {
    return fail(ErrorKind::kConfig, fmt::format("{}: database {} does not exist on the ClickHouse server; create it "
                                                "(CREATE DATABASE {}) or correct the sink's database",
                                                client_.where(), database_, ch_quote_identifier(database_)));
  }
  auto features = client_.query(
      "SELECT (SELECT count() FROM system.data_type_families WHERE name = 'DateTime64'), "
      "(SELECT count() FROM system.settings WHERE name = 'insert_deduplication_token') FORMAT TSV");
  if (!features) return std::unexpected(features.error());
  const size_t tab = features->find('\t');
  has_datetime64_ = parse_count(*features) > 0;
  has_dedup_token_ = tab != std::string::npos && parse_count(std::string_view(*features).substr(tab + 1)) > 0;
  if (tables_.per_stream()) return ok();  // each stream's table is described when its first batch comes
  auto columns = describe();
  if (!columns) return std::unexpected(columns.error());
  return ok();
}

Status ClickHouseSink::use_table_of(const Batch& batch) {
  // ClickHouse's table names are case-sensitive: only the same spelling is the same table.
  auto known = other_tables_.enter(tables_, batch.stream, tables_.table_for(batch.stream), same_name, table_, known_);
  if (!known) return std::unexpected(known.error());
  if (*known) return ok();
  auto columns = describe();
  if (!columns) return std::unexpected(columns.error());
  return ok();
}

Result<std::vector<TableColumn>> ClickHouseSink::describe() {
  auto rows =
      client_.query(fmt::format("SELECT name, type FROM system.columns WHERE database = {} AND table = {} FORMAT TSV",
                                ch_quote_literal(database_), ch_quote_literal(table_)));
  if (!rows) return std::unexpected(rows.error());
  std::vector<TableColumn> columns;
  std::string_view text = *rows;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) continue;
    // TSV escapes a backslash and a quote in the type ('UTC' is DateTime(\'UTC\')).
    std::string type;
    for (size_t i = tab + 1; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      type.push_back(line[i]);
    }
    columns.push_back({std::string(line.substr(0, tab)), std::move(type)});
  }
  known_.columns = columns;
  return columns;
}

Status ClickHouseSink::prepare_table(const Batch& batch) {
  if (known_.columns.empty()) {
    std::string sql = fmt::format("CREATE TABLE IF NOT EXISTS {} (", target());
    for (const auto& field : batch.schema.fields) {
      if (field.name == kBatchIdColumn || field.name == kRowColumn) continue;
      sql += fmt::format("{} {}, ", ch_quote_identifier(field.name), ch_new_column_type(field.type, has_datetime64_));
    }
    sql += fmt::format("{} String, {} UInt32) ENGINE = {}", kBatchIdColumn, kRowColumn,
                       engine_clause(engine_, database_, table_));
    SKIPPR_TRY(client_.query(sql));
    SKIPPR_TRY(describe());
  }
  for (std::string_view ours : {kBatchIdColumn, kRowColumn}) {
    if (!find_column(known_.columns, ours, ch_column_rules())) {
      return fail(ErrorKind::kConfig, fmt::format("{} has no column {}, which every row of this sink carries; add it "
                                                  "({} String, {} UInt32) or choose another table",
                                                  where(), ours, kBatchIdColumn, kRowColumn));
    }
  }
  auto missing = fields_to_add(known_.columns, batch.schema, ch_column_rules(), where(), /*skip_change_fields=*/false);
  if (!missing) return std::unexpected(missing.error());
  if (missing->empty()) return ok();
  for (const auto& field : *missing) {
    // Older servers (18.x) have no ADD COLUMN IF NOT EXISTS: a failed ADD is fine when the column is there now (a
    // retry after a lost answer, or a second writer).
    auto added = client_.query(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", target(), ch_quote_identifier(field.name),
                                           ch_new_column_type(field.type, has_datetime64_)));
    if (!added) {
      SKIPPR_TRY(describe());
      if (!find_column(known_.columns, field.name, ch_column_rules())) return std::unexpected(added.error());
    }
  }
  SKIPPR_TRY(describe());
  return ok();
}

Result<uint64_t> ClickHouseSink::rows_there(const BatchId& id) {
  auto answer = client_.query(fmt::format("SELECT uniqExact({}) FROM {} WHERE {} = {}", kRowColumn, target(),
                                          kBatchIdColumn, ch_quote_literal(id.str())));
  if (!answer) return std::unexpected(answer.error());
  return parse_count(*answer);
}

Status ClickHouseSink::write_rejects(const BatchId& id, const std::vector<RejectedRow>& rows) {
  if (!known_.rejects_ready) {
    SKIPPR_TRY(client_.query(
        fmt::format("CREATE TABLE IF NOT EXISTS {} (batch_id String, `row` Int64, reason String, record String, "
                    "rejected_at DateTime DEFAULT now()) ENGINE = ReplacingMergeTree ORDER BY (batch_id, `row`)",
                    rejects())));
    known_.rejects_ready = true;
  }
  for (const auto& sql : rejects_insert_sql(rejects(), id.str(), rows, ch_quote_literal)) {
    SKIPPR_TRY(client_.query(sql));
  }
  return ok();
}

Result<WriteOutcome> ClickHouseSink::land(const BatchToLand& item) {
  const Batch& batch = item.batch;
  last_rejected_ = 0;
  SKIPPR_TRY(use_table_of(batch));
  const bool table_was_there = !known_.columns.empty();
  SKIPPR_TRY(prepare_table(batch));
  auto conformed = conform_batch(batch, known_.columns, ch_column_rules(), where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : batch;
  std::vector<RejectedRow> rejected = *conformed ? std::move((*conformed)->rejected) : std::vector<RejectedRow>();

  // Each field's column and encoding; then the rows a column cannot hold (a null in a non-Nullable column, a date
  // out of range) join the rejects instead of failing the batch.
  std::vector<ChColumnEncoding> encodings;
  std::string column_list;
  for (const auto& field : rows.schema.fields) {
    const TableColumn* column = find_column(known_.columns, field.name, ch_column_rules());
    auto encoding = column ? ch_encoding(column->type) : std::nullopt;
    if (!encoding) {
      return fail(ErrorKind::kConfig, fmt::format("{}: column {} has type {}, which this sink cannot write; change "
                                                  "its type or drop the field before the sink",
                                                  where(), field.name, column ? column->type : "(none)"));
    }
    encodings.push_back(*encoding);
    column_list += ch_quote_identifier(field.name) + ", ";
  }
  // The accepted rows by their number in the batch as it came (conform_batch keeps their order).
  std::vector<uint32_t> row_numbers;
  {
    std::vector<bool> was_rejected(batch.rows, false);
    for (const auto& r : rejected) was_rejected[r.row] = true;
    for (uint32_t r = 0; r < batch.rows; ++r) {
      if (!was_rejected[r]) row_numbers.push_back(r);
    }
  }
  std::vector<size_t> keep;
  for (size_t r = 0; r < rows.rows; ++r) {
    std::optional<std::string> problem;
    size_t f = 0;
    for (; f < encodings.size() && !problem; ++f) problem = ch_value_problem(encodings[f], rows.columns[f], r);
    if (problem) {
      std::string record;
      append_row_json(rows, r, record);
      rejected.push_back(
          {row_numbers[r], fmt::format("field '{}' {}", rows.schema.fields[f - 1].name, *problem), std::move(record)});
    } else {
      keep.push_back(r);
    }
  }

  if (item.maybe_landed && table_was_there) {
    auto there = rows_there(item.id);
    if (!there) return std::unexpected(there.error());
    if (*there == keep.size() && keep.size() > 0) return WriteOutcome::kAlreadyApplied;
  }
  if (!rejected.empty()) SKIPPR_TRY(write_rejects(item.id, rejected));

  encoded_.clear();
  const std::string batch_id = item.id.str();
  for (size_t r : keep) {
    for (size_t f = 0; f < encodings.size(); ++f) ch_append_value(encodings[f], rows.columns[f], r, encoded_);
    ch_append_string(batch_id, encoded_);
    const uint32_t number = row_numbers[r];
    encoded_.append(reinterpret_cast<const char*>(&number), sizeof number);
  }
  ClickHouseSettings settings;
  if (has_dedup_token_) settings.emplace_back("insert_deduplication_token", batch_id);
  failpoint::hit(failpoint::kSinkInTransaction);
  if (!keep.empty()) {
    SKIPPR_TRY(client_.insert(
        fmt::format("INSERT INTO {} ({}{}, {}) FORMAT RowBinary", target(), column_list, kBatchIdColumn, kRowColumn),
        encoded_, settings));
  }
  failpoint::hit(failpoint::kSinkAfterCommit);
  last_rejected_ = rejected.size();
  return WriteOutcome::kApplied;
}

}  // namespace

ConnectorSpec clickhouse_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "ClickHouse";
  spec.is_source = false;
  spec.summary = "a ClickHouse table over HTTP (RowBinary, one INSERT per batch; rows carry their batch id)";
  spec.guarantee = Guarantee::kAtLeastOnce;
  spec.lands_streams = true;  // one table after another, each part deduplicated by its batch id
  spec.params = {
      {"url", ParamType::kString, true, nullptr, "the server's HTTP interface, e.g. http://127.0.0.1:8123"},
      {"database", ParamType::kString, false, "default", "the database; it must exist"},
      {"table", ParamType::kString, false, nullptr,
       "the target table; created from the first batch's schema. May hold {stream} (default for a source of several "
       "streams: {stream}, each stream in a table of its own)"},
      {"user", ParamType::kString, false, "default", "the ClickHouse user"},
      {"password", ParamType::kString, false, "", "the user's password (a secret: give it as ${VAR})"},
      {"engine", ParamType::kString, false, std::string(kDefaultEngine),
       "the engine clause of a table the sink creates; {database} and {table} are replaced"},
      {"timeout_seconds", ParamType::kDouble, false, 300.0, "how long one request may take"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string where = fmt::format("sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("{}: landing {} is not supported by ClickHouse (at least once); use "
                                                  "append",
                                                  where, to_string(ctx.landing)));
    }
    ClickHouseConfig config;
    config.url = ctx.params.value("url", std::string());
    config.user = ctx.params.value("user", std::string("default"));
    config.password = ctx.params.value("password", std::string());
    config.timeout_seconds = ctx.params.value("timeout_seconds", 300.0);
    config.where = where;
    if (!config.url.starts_with("http://") && !config.url.starts_with("https://")) {
      return fail(ErrorKind::kConfig, fmt::format("{}: url must be the server's HTTP interface (http:// or https://, "
                                                  "e.g. http://127.0.0.1:8123)",
                                                  where));
    }
    const std::string database = ctx.params.value("database", std::string("default"));
    if (database.empty()) return fail(ErrorKind::kConfig, fmt::format("{}: database must not be empty", where));
    auto tables = StreamTables::make(where, "table", StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    return std::make_unique<ClickHouseSink>(std::move(config), database, std::move(*tables),
                                            ctx.params.value("engine", std::string(kDefaultEngine)));
  };
  return spec;
}

}  // namespace skippr
