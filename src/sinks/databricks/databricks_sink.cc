#include "sinks/databricks/databricks_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "clients/databricks/databricks_client.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "sinks/batch_ledger.h"
#include "sinks/change_fields.h"
#include "sinks/conform_batch.h"
#include "sinks/databricks/dbx_types.h"
#include "sinks/merge_sql.h"
#include "sinks/per_batch_sink.h"
#include "sinks/schema_evolution.h"

namespace skippr {
namespace {

constexpr std::string_view kTokenType = "DECIMAL(38,0)";
constexpr std::string_view kRowsSuffix = ".rows.json";
constexpr std::string_view kRejectsSuffix = ".rejects.json";
constexpr std::string_view kLandingSuffix = ".landing.json";
// Every value of a batch's file is a JSON string (dbx_append_json_value): read back as text, then converted.
constexpr std::string_view kJsonOptions = "FORMAT_OPTIONS ('primitivesAsString' = 'true')";

// The files of one batch in the sink's folder: <lineage>-<epoch>-<seq> and a suffix.
std::string file_stem(const BatchId& id) {
  return fmt::format("{}-{}-{}", id.lineage.empty() ? "none" : id.lineage, id.epoch, id.seq);
}

// What a landing file says: the batch, the statements that land it (each a no-op when run again) and its files.
struct LandingFile {
  std::string batch_id;
  std::string landed_sql;  // one row when the ledger holds the batch
  std::vector<std::string> statements;
  std::vector<std::string> files;  // names in the folder, the landing file last
};

std::string landing_json(const LandingFile& l) {
  return nlohmann::json{
      {"batch_id", l.batch_id}, {"landed_sql", l.landed_sql}, {"statements", l.statements}, {"files", l.files}}
      .dump();
}

std::optional<LandingFile> parse_landing(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_object() || !json.contains("statements") || !json.contains("files")) return std::nullopt;
  LandingFile l;
  l.batch_id = json.value("batch_id", "");
  l.landed_sql = json.value("landed_sql", "");
  for (const auto& s : json["statements"]) l.statements.push_back(s.get<std::string>());
  for (const auto& f : json["files"]) l.files.push_back(f.get<std::string>());
  return l;
}

class DatabricksSink final : public PerBatchSink {
 public:
  DatabricksSink(DatabricksClient client, std::string catalog, std::string schema, std::string table,
                 std::string volume_root, std::string pipeline, std::vector<std::string> merge_key)
      : client_(std::move(client)),
        catalog_(std::move(catalog)),
        schema_(std::move(schema)),
        table_(std::move(table)),
        volume_(volume_root),
        folder_(fmt::format("{}/_skippr/{}/{}", volume_root, table_, pipeline)),
        pipeline_(std::move(pipeline)),
        merge_key_(std::move(merge_key)) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;

 private:
  std::string prefix() const { return dbx_quote_identifier(catalog_) + "." + dbx_quote_identifier(schema_) + "."; }
  std::string target() const { return prefix() + dbx_quote_identifier(table_); }
  std::string rejects() const { return prefix() + dbx_quote_identifier(table_ + std::string(kRejectedSuffix)); }
  std::string tombstones() const { return prefix() + dbx_quote_identifier(table_ + std::string(kTombstoneSuffix)); }
  bool merging() const { return !merge_key_.empty(); }
  std::string where() const { return fmt::format("{}: table {}.{}.{}", client_.where(), catalog_, schema_, table_); }
  LedgerDialect ledger() const { return {prefix(), "", dbx_quote_literal, "STRING", "BIGINT", dbx_quote_identifier}; }
  Status describe();
  Status prepare_table(const Batch& batch);
  Result<bool> held(const std::string& landed_sql);
  // The statements of a landing file in order, then its files removed.
  Status run_landing(const LandingFile& landing);
  void remove_files(const std::vector<std::string>& names);
  // Finishes every batch whose landing file a run that stopped left behind, and removes the files of batches that
  // never got one (they were never loaded).
  Status finish_pending();
  Result<WriteOutcome> land(const BatchToLand& item) override;
  // The SELECT list that reads `fields` from a batch's file into the target's column types.
  std::string converted_columns(const Schema& schema, bool keep_change_fields, bool row_numbers) const;

  DatabricksClient client_;
  std::string catalog_, schema_, table_;
  std::string volume_;  // /Volumes/<catalog>/<schema>/<volume>[/folder]
  std::string folder_;  // where this table's batches wait: <volume>/_skippr/<table>/<pipeline>
  std::string pipeline_;
  std::vector<std::string> merge_key_;  // merge_by_key's primary key; empty: append
  bool opened_ = false;
  std::vector<TableColumn> columns_;  // the target's, as last described (empty: not there yet)
  bool rejects_ready_ = false;
};

Status DatabricksSink::open() {
  if (opened_) return ok();
  // The first statement proves the token, the warehouse, the catalog and the schema; the ledger is made once.
  SKIPPR_TRY(client_.execute(fmt::format(
      "CREATE TABLE IF NOT EXISTS {}`{}` (target_table STRING NOT NULL, batch_id STRING NOT NULL, pipeline STRING, "
      "lineage STRING, epoch BIGINT, seq BIGINT, `rows` BIGINT, position_after STRING, landed_at TIMESTAMP DEFAULT "
      "current_timestamp()) TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
      prefix(), kLedgerTable)));
  SKIPPR_TRY(describe());
  auto volume = client_.directory_exists(volume_);
  if (!volume) return std::unexpected(volume.error());
  if (!*volume) {
    return fail(ErrorKind::kConfig, fmt::format("{}: volume {} does not exist (or the token's user may not read it); "
                                                "create it (CREATE VOLUME) or fix `volume`",
                                                client_.where(), volume_));
  }
  opened_ = true;
  return ok();
}

Status DatabricksSink::describe() {
  auto rows = client_.execute(
      fmt::format("SELECT column_name, full_data_type FROM {}.information_schema.columns WHERE lower(table_schema) = "
                  "lower({}) AND lower(table_name) = lower({}) ORDER BY ordinal_position",
                  dbx_quote_identifier(catalog_), dbx_quote_literal(schema_), dbx_quote_literal(table_)));
  if (!rows) return std::unexpected(rows.error());
  columns_.clear();
  for (const auto& row : *rows) columns_.push_back({row.at(0).value_or(""), row.at(1).value_or("")});
  return ok();
}

Result<bool> DatabricksSink::held(const std::string& landed_sql) {
  auto rows = client_.execute(landed_sql);
  if (!rows) return std::unexpected(rows.error());
  return !rows->empty();
}

void DatabricksSink::remove_files(const std::vector<std::string>& names) {
  // The landing file is last: while it is there, its batch can still be finished.
  for (const auto& name : names) {
    auto removed = client_.remove(folder_ + "/" + name);
    if (!removed) {
      spdlog::debug("{}: {} stays in the volume ({}); it is removed on a later start", where(), name,
                    removed.error().message);
      return;
    }
  }
}

Status DatabricksSink::run_landing(const LandingFile& landing) {
  for (size_t i = 0; i < landing.statements.size(); ++i) {
    // Between the rows and the ledger row: the landing file finishes the batch.
    if (i + 1 == landing.statements.size()) failpoint::hit(failpoint::kSinkInTransaction);
    auto done = client_.execute(landing.statements[i]);
    if (!done) return fail(done.error().kind, done.error().message);
  }
  failpoint::hit(failpoint::kSinkAfterCommit);
  remove_files(landing.files);
  return ok();
}

Status DatabricksSink::finish_pending() {
  auto names = client_.list_files(folder_);
  if (!names) return std::unexpected(names.error());
  std::vector<std::string> orphans;
  for (const auto& name : *names) {
    if (!name.ends_with(kLandingSuffix)) {
      const std::string stem = name.substr(0, name.find('.'));
      if (std::find(names->begin(), names->end(), stem + std::string(kLandingSuffix)) == names->end()) {
        orphans.push_back(name);
      }
      continue;
    }
    auto text = client_.download(folder_ + "/" + name);
    if (!text) return std::unexpected(text.error());
    if (!*text) continue;
    const auto landing = parse_landing(**text);
    if (!landing) {
      return fail(ErrorKind::kConfig, fmt::format("{}: {}/{} is not a landing file skipprd wrote; move it out of the "
                                                  "folder",
                                                  where(), folder_, name));
    }
    auto landed = held(landing->landed_sql);
    if (!landed) return std::unexpected(landed.error());
    if (*landed) {
      remove_files(landing->files);
      continue;
    }
    spdlog::warn("{}: finishing batch {}, which an earlier run committed but did not finish", where(),
                 landing->batch_id);
    SKIPPR_TRY(run_landing(*landing));
  }
  // A file without its landing file was never loaded (the landing file comes before any statement).
  remove_files(orphans);
  return ok();
}

Result<std::optional<LedgerTip>> DatabricksSink::ledger_tip() {
  SKIPPR_TRY(open());
  SKIPPR_TRY(finish_pending());
  auto rows = client_.execute(ledger_tip_sql(ledger(), target(), pipeline_));
  if (!rows) return fail(rows.error().kind, fmt::format("reading the ledger of {}: {}", where(), rows.error().message));
  return ledger_tip_of(*rows);
}

Status DatabricksSink::prepare_table(const Batch& batch) {
  const ColumnRules rules = dbx_column_rules();
  if (columns_.empty()) {
    std::vector<std::string> definitions;
    for (const Field& field : batch.schema.fields) {
      if (merging() && is_change_field(field.name)) continue;
      definitions.push_back(fmt::format("{} {}", dbx_quote_identifier(field.name), dbx_new_column_type(field.type)));
    }
    // merge_by_key keeps each row's order token.
    if (merging()) definitions.push_back(fmt::format("{} {}", dbx_quote_identifier(kOrderColumn), kTokenType));
    SKIPPR_TRY(
        client_.execute(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", target(), fmt::join(definitions, ", "))));
    SKIPPR_TRY(describe());
  }
  if (merging()) {
    for (const auto& key : merge_key_) {
      if (!find_column(columns_, key, rules)) {
        return fail(ErrorKind::kConfig, fmt::format("{} has no column {} of the pipeline's primary_key; fix "
                                                    "primary_key or choose another table",
                                                    where(), dbx_quote_identifier(key)));
      }
    }
  }
  auto missing = fields_to_add(columns_, batch.schema, rules, where(), merging());
  if (!missing) return std::unexpected(missing.error());
  for (const auto& field : *missing) {
    // ADD COLUMNS has no IF NOT EXISTS: a resend after a lost answer fails on the column it added, which the
    // description then shows.
    auto added = client_.execute(fmt::format("ALTER TABLE {} ADD COLUMNS ({} {})", target(),
                                             dbx_quote_identifier(field.name), dbx_new_column_type(field.type)));
    if (!added) {
      SKIPPR_TRY(describe());
      if (!find_column(columns_, field.name, rules)) return std::unexpected(added.error());
    }
  }
  return missing->empty() ? ok() : describe();
}

std::string DatabricksSink::converted_columns(const Schema& schema, bool keep_change_fields, bool row_numbers) const {
  const ColumnRules rules = dbx_column_rules();
  std::vector<std::string> select;
  for (const Field& field : schema.fields) {
    const std::string name = dbx_quote_identifier(field.name);
    if (is_change_field(field.name)) {
      if (keep_change_fields) select.push_back(name);  // read as text; the MERGE converts the order token itself
      continue;
    }
    const TableColumn* column = find_column(columns_, field.name, rules);
    select.push_back(fmt::format("{} AS {}", dbx_convert(name, column ? column->type : "STRING"), name));
  }
  if (row_numbers) {
    const std::string name = dbx_quote_identifier(kRowNumberColumn);
    select.push_back(fmt::format("CAST({} AS {}) AS {}", name, kTokenType, name));
  }
  return fmt::format("{}", fmt::join(select, ", "));
}

Result<WriteOutcome> DatabricksSink::land(const BatchToLand& item) {
  SKIPPR_TRY(open());
  last_rejected_ = 0;
  const std::string stem = file_stem(item.id);
  LandingFile landing;
  landing.batch_id = item.id.str();
  landing.landed_sql = ledger_has_sql(ledger(), target(), item.id);
  // Only a batch an earlier attempt may have landed can be in the ledger; asking costs a round trip, so only then.
  if (item.maybe_landed) {
    auto landed = held(landing.landed_sql);
    if (!landed) return std::unexpected(landed.error());
    if (*landed) {
      remove_files(
          {stem + std::string(kRowsSuffix), stem + std::string(kRejectsSuffix), stem + std::string(kLandingSuffix)});
      return WriteOutcome::kAlreadyApplied;
    }
  }
  const ColumnRules rules = dbx_column_rules();
  if (merging()) SKIPPR_TRY(check_merge_rows(item.batch, merge_key_, rules, where()));
  SKIPPR_TRY(prepare_table(item.batch));
  auto conformed = conform_batch(item.batch, columns_, rules, where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : item.batch;
  const std::vector<RejectedRow> rejected = *conformed ? (*conformed)->rejected : std::vector<RejectedRow>();

  // Each file is written once under its batch's name; a second upload (an attempt after a lost answer or a kill)
  // meets the first and leaves it: the same batch gives the same bytes.
  auto put = [&](std::string_view suffix, const std::string& bytes) -> Status {
    const std::string name = stem + std::string(suffix);
    auto uploaded = client_.upload(folder_ + "/" + name, bytes);
    if (!uploaded) return std::unexpected(uploaded.error());
    landing.files.push_back(name);
    return ok();
  };
  if (rows.rows > 0) {
    const std::string rows_name = stem + std::string(kRowsSuffix);
    SKIPPR_TRY(put(kRowsSuffix, text_valued_json_lines(rows, merging() ? kRowNumberColumn : std::string_view())));
    if (merging()) {
      const std::string stage =
          fmt::format("(SELECT {} FROM read_files({}, format => 'json', primitivesAsString => true))",
                      converted_columns(rows.schema, /*keep_change_fields=*/true, /*row_numbers=*/true),
                      dbx_quote_literal(folder_ + "/" + rows_name));
      const MergeSql m{target(), tombstones(), stage, merge_key_, columns_, rules, std::string(kTokenType), "EXCEPT"};
      landing.statements.push_back(tombstones_create_sql(m));
      // Without a transaction the MERGE statements can stop between one another; run again from the first, each
      // writes only what an older order token allows, so the table ends as one run would leave it.
      for (auto& sql : merge_apply_sql(rows, item.id, m, has_deletes(rows))) landing.statements.push_back(sql);
    } else {
      landing.statements.push_back(
          fmt::format("COPY INTO {} FROM (SELECT {} FROM {}) FILEFORMAT = JSON FILES = ({}) {}", target(),
                      converted_columns(rows.schema, false, false), dbx_quote_literal(folder_),
                      dbx_quote_literal(rows_name), kJsonOptions));
    }
  }
  if (!rejected.empty()) {
    if (!rejects_ready_) {
      SKIPPR_TRY(
          client_.execute(fmt::format("CREATE TABLE IF NOT EXISTS {} (batch_id STRING NOT NULL, `row` BIGINT "
                                      "NOT NULL, reason STRING, record STRING, rejected_at TIMESTAMP)",
                                      rejects())));
      rejects_ready_ = true;
    }
    std::string bytes;
    for (const auto& r : rejected) {
      bytes +=
          nlohmann::json{
              {"batch_id", item.id.str()}, {"row", std::to_string(r.row)}, {"reason", r.reason}, {"record", r.record}}
              .dump();
      bytes += '\n';
    }
    SKIPPR_TRY(put(kRejectsSuffix, bytes));
    // COPY INTO, so a rejected row is recorded once too.
    landing.statements.push_back(fmt::format(
        "COPY INTO {} FROM (SELECT batch_id, CAST(`row` AS BIGINT) AS `row`, reason, record, current_timestamp() AS "
        "rejected_at FROM {}) FILEFORMAT = JSON FILES = ({}) {}",
        rejects(), dbx_quote_literal(folder_), dbx_quote_literal(stem + std::string(kRejectsSuffix)), kJsonOptions));
  }
  landing.statements.push_back(
      ledger_insert_unless_landed_sql(ledger(), target(), item.id, item.batch.rows, item.position_after));
  if (!landing.files.empty()) {
    // From here the batch is committed to the destination: whoever finds this file finishes it.
    landing.files.push_back(stem + std::string(kLandingSuffix));
    auto uploaded = client_.upload(folder_ + "/" + landing.files.back(), landing_json(landing));
    if (!uploaded) return std::unexpected(uploaded.error());
  }
  SKIPPR_TRY(run_landing(landing));
  last_rejected_ = rejected.size();
  return WriteOutcome::kApplied;
}

}  // namespace

ConnectorSpec databricks_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Databricks";
  spec.is_source = false;
  spec.summary = "a Delta table on a Databricks SQL warehouse (files in a Unity Catalog volume + COPY INTO)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.params = {
      {"host", ParamType::kString, true, nullptr, "the workspace host, e.g. dbc-1234abcd-5678.cloud.databricks.com"},
      {"token", ParamType::kString, true, nullptr, "a personal access token or OAuth token (a secret: use ${VAR})"},
      {"warehouse_id", ParamType::kString, true, nullptr, "the SQL warehouse that runs the statements"},
      {"catalog", ParamType::kString, false, "main", "the Unity Catalog catalog"},
      {"schema", ParamType::kString, false, "default", "the schema in the catalog"},
      {"table", ParamType::kString, true, nullptr, "the target table, created from the first batch"},
      {"volume", ParamType::kString, true, nullptr,
       "a volume of the catalog and schema (its name), or a /Volumes/<catalog>/<schema>/<volume>[/folder] path, "
       "where batches wait to be loaded"},
      {"endpoint", ParamType::kString, false, "", "the API's origin; empty: https://<host>"},
      {"timeout_seconds", ParamType::kDouble, false, 60.0, "how long one HTTP request may take"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string where = fmt::format("sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend && ctx.landing != Landing::kMergeByKey) {
      return fail(ErrorKind::kConfig, fmt::format("{}: landing {} is not built for Databricks yet; use append or "
                                                  "merge_by_key",
                                                  where, to_string(ctx.landing)));
    }
    DatabricksConfig config;
    config.host = ctx.params.value("host", std::string());
    config.token = ctx.params.value("token", std::string());
    config.warehouse_id = ctx.params.value("warehouse_id", std::string());
    config.catalog = ctx.params.value("catalog", std::string("main"));
    config.schema = ctx.params.value("schema", std::string("default"));
    config.endpoint = ctx.params.value("endpoint", std::string());
    config.request_timeout_seconds = ctx.params.value("timeout_seconds", 60.0);
    config.where = where;
    if (!config.endpoint.empty() && !config.endpoint.starts_with("http://") &&
        !config.endpoint.starts_with("https://")) {
      return fail(ErrorKind::kConfig, fmt::format("{}: endpoint must start with https:// (or http://)", where));
    }
    std::string volume = ctx.params.value("volume", std::string());
    while (volume.ends_with('/')) volume.pop_back();
    if (!volume.starts_with("/")) {
      if (volume.empty() || volume.find('/') != std::string::npos) {
        return fail(ErrorKind::kConfig, fmt::format("{}: volume must be a volume's name or a /Volumes/<catalog>/"
                                                    "<schema>/<volume> path",
                                                    where));
      }
      volume = fmt::format("/Volumes/{}/{}/{}", config.catalog, config.schema, volume);
    } else if (!volume.starts_with("/Volumes/") || std::count(volume.begin(), volume.end(), '/') < 4) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: volume {} is not a /Volumes/<catalog>/<schema>/<volume> path", where, volume));
    }
    const std::string catalog = config.catalog, schema = config.schema;
    return std::make_unique<DatabricksSink>(
        DatabricksClient(std::move(config)), catalog, schema, ctx.params.value("table", std::string()), volume,
        ctx.pipeline, ctx.landing == Landing::kMergeByKey ? ctx.primary_key : std::vector<std::string>());
  };
  return spec;
}

}  // namespace skippr
