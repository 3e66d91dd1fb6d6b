#include "sinks/databricks/databricks_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <span>

#include "clients/databricks/databricks_client.h"
#include "core/ascii.h"
#include "core/change_fields.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "sinks/databricks/dbx_types.h"
#include "sinks/databricks/landing_file.h"
#include "sinks/kit/batch_ledger.h"
#include "sinks/kit/conform_batch.h"
#include "sinks/kit/merge_sql.h"
#include "sinks/kit/per_batch_sink.h"
#include "sinks/kit/schema_evolution.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

constexpr std::string_view kTokenType = "DECIMAL(38,0)";
constexpr std::string_view kRowsSuffix = ".rows.json";
constexpr std::string_view kRejectsSuffix = ".rejects.json";
constexpr std::string_view kLandingSuffix = ".landing.json";
// Every value of a batch's file is a JSON string (formats/json_rows.h's text_valued_json_lines): read back as text,
// then converted.
constexpr std::string_view kJsonOptions = "FORMAT_OPTIONS ('primitivesAsString' = 'true')";

// The files of one batch in the sink's folder: <lineage>-<epoch>-<seq> and a suffix.
std::string file_stem(const BatchId& id) {
  return fmt::format("{}-{}-{}", id.lineage.empty() ? "none" : id.lineage, id.epoch, id.seq);
}

// A name this sink wrote in its folder: "<stem>.rows.json", ".rejects.json" or ".landing.json", a part of a batch of
// several streams with its place in the batch between ("<stem>.2.rows.json"); others are left alone.
bool ours(const std::string& name) {
  static const std::regex kName(R"(^[0-9A-Za-z_]+-[0-9]+-[0-9]+(\.[0-9]+)?\.(rows|rejects|landing)\.json$)");
  return std::regex_match(name, kName);
}

// Delta refuses these in column names unless the table maps columns by name.
bool needs_column_mapping(const Schema& schema) {
  for (const Field& field : schema.fields) {
    if (field.name.find_first_of(" ,;{}()\n\t=") != std::string::npos) return true;
  }
  return false;
}

class DatabricksSink final : public PerBatchSink {
 public:
  // `tables` says where each stream lands (one table, or a {stream} pattern: sinks/kit/stream_tables.h); `merge`
  // lands by key, on `pipeline_key` or each batch's own (merge_key_of). A batch of several streams has one landing
  // file for all its tables: Delta commits per table, and the landing file makes the batch one commitment.
  DatabricksSink(DatabricksClient client, std::string signing_key, std::string catalog, std::string schema,
                 StreamTables tables, std::string volume_root, std::string pipeline, bool merge,
                 std::vector<std::string> pipeline_key)
      : client_(std::move(client)),
        signing_key_(std::move(signing_key)),
        catalog_(std::move(catalog)),
        schema_(std::move(schema)),
        tables_(std::move(tables)),
        table_(tables_.pattern()),
        volume_(volume_root),
        folder_(fmt::format("{}/_skippr/{}/{}", volume_root, tables_as_one_name(table_), pipeline)),
        pipeline_(std::move(pipeline)),
        merge_(merge),
        pipeline_key_(std::move(pipeline_key)),
        merge_key_(merge ? pipeline_key_ : std::vector<std::string>()) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  // The parts of one batch (its streams) under one landing file; batches one after another.
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;

 private:
  std::string prefix() const { return dbx_quote_identifier(catalog_) + "." + dbx_quote_identifier(schema_) + "."; }
  std::string target_of(std::string_view table) const { return prefix() + dbx_quote_identifier(table); }
  std::string target() const { return target_of(table_); }
  std::string rejects() const { return prefix() + dbx_quote_identifier(table_ + std::string(kRejectedSuffix)); }
  std::string tombstones() const { return prefix() + dbx_quote_identifier(table_ + std::string(kTombstoneSuffix)); }
  bool merging() const { return merge_; }
  std::string where() const { return fmt::format("{}: table {}.{}.{}", client_.where(), catalog_, schema_, table_); }
  LedgerDialect ledger() const { return {prefix(), "", dbx_quote_literal, "STRING", "BIGINT", dbx_quote_identifier}; }
  Status describe();
  // Points table_ (and what is known of it) at the table `batch`'s stream lands in, and merge_key_ at its key.
  Status use_table_of(const Batch& batch);
  Status prepare_table(const Batch& batch);
  Result<bool> held(const std::string& landed_sql);
  // The statements of a landing file in order, then its files removed.
  Status run_landing(const LandingFile& landing);
  // The landing file `name` in the folder, checked; nullopt when there is none.
  Result<std::optional<LandingFile>> read_landing(const std::string& name);
  void remove_files(const std::vector<std::string>& names);
  // Once a process, before it lands anything: finishes every batch whose landing file an earlier run left behind,
  // and removes the files of batches that never got one (they were never loaded).
  Status finish_pending();
  Result<WriteOutcome> land(const BatchToLand& item) override;
  // One batch: its parts (one per stream, all with its id) under one landing file.
  Result<std::vector<BatchLanded>> land_batch(std::span<const BatchToLand> parts);
  // The statements and files of one part of a batch, added to `landing`; the rows it rejects.
  Result<uint64_t> add_part(const BatchToLand& item, const std::string& stem, LandingFile& landing);
  // The SELECT list that reads `fields` from a batch's file into the target's column types.
  std::string converted_columns(const Schema& schema, bool keep_change_fields, bool row_numbers) const;

  DatabricksClient client_;
  std::string signing_key_;  // the token: landing files are signed with it
  std::string catalog_, schema_;
  StreamTables tables_;
  std::string table_;   // the table being landed in (use_table_of)
  std::string volume_;  // /Volumes/<catalog>/<schema>/<volume>[/folder]
  // Where the pipeline's batches wait: <volume>/_skippr/<table>/<pipeline> (a {stream} pattern as one name).
  std::string folder_;
  std::string pipeline_;
  bool merge_ = false;                     // landing: merge_by_key
  std::vector<std::string> pipeline_key_;  // the pipeline's primary_key (empty: each batch carries its own)
  std::vector<std::string> merge_key_;     // the key of the batch being landed
  bool opened_ = false;
  bool pending_finished_ = false;
  // What is known of table_: its columns as last described (empty: not there yet), whether its rejects table is made.
  struct TableState {
    std::vector<TableColumn> columns;
    bool rejects_ready = false;
  };
  TableState known_;
  KnownPerTable<TableState> other_tables_;  // the same of the stream tables other than table_
};

Status DatabricksSink::open() {
  if (opened_) return ok();
  // The first statement proves the token, the warehouse, the catalog and the schema; the ledger is made once.
  SKIPPR_TRY(client_.execute(fmt::format(
      "CREATE TABLE IF NOT EXISTS {}`{}` (target_table STRING NOT NULL, batch_id STRING NOT NULL, pipeline STRING, "
      "lineage STRING, epoch BIGINT, seq BIGINT, `rows` BIGINT, position_after STRING, landed_at TIMESTAMP DEFAULT "
      "current_timestamp()) TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
      prefix(), kLedgerTable)));
  if (!tables_.per_stream()) SKIPPR_TRY(describe());
  // The volume itself (its first four segments): a folder below it is made by the first upload.
  size_t root_end = 0;
  for (int slashes = 0; slashes < 5 && root_end != std::string::npos; ++slashes)
    root_end = volume_.find('/', root_end + 1);
  const std::string root = volume_.substr(0, root_end);
  auto volume = client_.directory_exists(root);
  if (!volume) return std::unexpected(volume.error());
  if (!*volume) {
    return fail(ErrorKind::kConfig, fmt::format("{}: volume {} does not exist (or the token's user may not read it); "
                                                "create it (CREATE VOLUME) or fix `volume`",
                                                client_.where(), root));
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
  known_.columns.clear();
  for (const auto& row : *rows) known_.columns.push_back({row.at(0).value_or(""), row.at(1).value_or("")});
  return ok();
}

Status DatabricksSink::use_table_of(const Batch& batch) {
  if (merging()) {
    merge_key_ = merge_key_of(batch, pipeline_key_);
    if (merge_key_.empty()) return no_merge_key(batch, where());
  }
  // Unity Catalog keeps names in lower case: Orders and orders are one table.
  auto known =
      other_tables_.enter(tables_, batch.stream, tables_.table_for(batch.stream), ascii_lowercase, table_, known_);
  if (!known) return std::unexpected(known.error());
  return *known ? ok() : describe();
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
      spdlog::debug("{}: {} stays in the volume ({}); the next process removes it before it lands", where(), name,
                    removed.error().message);
      return;
    }
  }
}

Status DatabricksSink::run_landing(const LandingFile& landing) {
  for (size_t i = 0; i < landing.statements.size(); ++i) {
    // After the first statement, with more to come (the rows landed, not yet the rejects or the ledger row): a stop
    // here leaves exactly what the landing file is for.
    if (i == 1) failpoint::hit(failpoint::kSinkInTransaction);
    if (std::ranges::find(landing.part_starts, i) != landing.part_starts.end()) {
      failpoint::hit(failpoint::kSinkBetweenTables);
    }
    auto done = client_.execute(landing.statements[i], /*write=*/true);
    if (!done) {
      return fail(done.error().kind, fmt::format("{} (landing batch {}, {}/{})", done.error().message, landing.batch_id,
                                                 folder_, landing.files.empty() ? "" : landing.files.back()));
    }
  }
  failpoint::hit(failpoint::kSinkAfterCommit);
  remove_files(landing.files);
  return ok();
}

Result<std::optional<LandingFile>> DatabricksSink::read_landing(const std::string& name) {
  auto text = client_.download(folder_ + "/" + name);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<LandingFile>();
  auto landing = parse_landing_file(**text, signing_key_, fmt::format("{}: {}/{}", where(), folder_, name));
  if (!landing) return std::unexpected(landing.error());
  return std::optional(std::move(*landing));
}

Status DatabricksSink::finish_pending() {
  if (pending_finished_) return ok();
  auto names = client_.list_files(folder_);
  if (!names) return std::unexpected(names.error());
  std::vector<std::string> orphans;
  for (const auto& name : *names) {
    if (!ours(name)) continue;
    if (!name.ends_with(kLandingSuffix)) {
      const std::string stem = name.substr(0, name.find('.'));
      if (std::find(names->begin(), names->end(), stem + std::string(kLandingSuffix)) == names->end()) {
        orphans.push_back(name);
      }
      continue;
    }
    auto landing = read_landing(name);
    if (!landing) return std::unexpected(landing.error());
    if (!*landing) continue;
    auto landed = held((*landing)->landed_sql);
    if (!landed) return std::unexpected(landed.error());
    if (*landed) {
      remove_files((*landing)->files);
      continue;
    }
    spdlog::warn("{}: finishing batch {}, which an earlier run committed but did not finish", where(),
                 (*landing)->batch_id);
    SKIPPR_TRY(run_landing(**landing));
  }
  // A file without its landing file was never loaded (the landing file comes before any statement).
  remove_files(orphans);
  pending_finished_ = true;
  return ok();
}

Result<std::optional<LedgerTip>> DatabricksSink::ledger_tip() {
  SKIPPR_TRY(open());
  // A landing of a killed process still executing makes this transient (a COPY INTO of the same file is refused
  // meanwhile): the engine asks again, and the tip is read once every landing that process committed is finished.
  SKIPPR_TRY(finish_pending());
  auto rows = client_.execute(
      tables_.per_stream()
          ? ledger_tip_any_table_sql(ledger(), tables_.target_like([this](std::string_view t) { return target_of(t); }),
                                     pipeline_)
          : ledger_tip_sql(ledger(), target(), pipeline_));
  if (!rows) return fail(rows.error().kind, fmt::format("reading the ledger of {}: {}", where(), rows.error().message));
  return ledger_tip_of(*rows);
}

Status DatabricksSink::prepare_table(const Batch& batch) {
  const ColumnRules rules = dbx_column_rules();
  if (known_.columns.empty()) {
    const auto definitions =
        new_table_definitions(batch.schema, rules, dbx_new_column_type, merging() ? kTokenType : "");
    const char* mapping = needs_column_mapping(batch.schema)
                              ? " TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = "
                                "'2', 'delta.minWriterVersion' = '5')"
                              : "";
    SKIPPR_TRY(client_.execute(
        fmt::format("CREATE TABLE IF NOT EXISTS {} ({}){}", target(), fmt::join(definitions, ", "), mapping)));
    SKIPPR_TRY(describe());
  }
  SKIPPR_TRY(check_key_columns(known_.columns, merge_key_, rules, where()));
  auto missing = fields_to_add(known_.columns, batch.schema, rules, where(), merging());
  if (!missing) return std::unexpected(missing.error());
  for (const auto& field : *missing) {
    // ADD COLUMNS has no IF NOT EXISTS: a resend after a lost answer fails on the column it added, which the
    // description then shows.
    auto added = client_.execute(fmt::format("ALTER TABLE {} ADD COLUMNS ({} {})", target(),
                                             dbx_quote_identifier(field.name), dbx_new_column_type(field.type)));
    if (!added) {
      SKIPPR_TRY(describe());
      if (!find_column(known_.columns, field.name, rules)) return std::unexpected(added.error());
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
    const TableColumn* column = find_column(known_.columns, field.name, rules);
    select.push_back(fmt::format("{} AS {}", dbx_convert(name, column ? column->type : "STRING"), name));
  }
  if (row_numbers) {
    const std::string name = dbx_quote_identifier(kRowNumberColumn);
    select.push_back(fmt::format("CAST({} AS {}) AS {}", name, kTokenType, name));
  }
  return fmt::format("{}", fmt::join(select, ", "));
}

Result<std::vector<BatchLanded>> DatabricksSink::write_group(std::span<const BatchToLand> group) {
  std::vector<BatchLanded> landed;
  for (size_t first = 0; first < group.size();) {
    size_t end = first + 1;  // the parts of one batch: consecutive items with its id
    while (end < group.size() && group[end].id.str() == group[first].id.str()) ++end;
    auto batch = land_batch(group.subspan(first, end - first));
    if (!batch) return std::unexpected(batch.error());
    landed.insert(landed.end(), batch->begin(), batch->end());
    first = end;
  }
  return landed;
}

Result<WriteOutcome> DatabricksSink::land(const BatchToLand& item) {
  last_rejected_ = 0;
  auto landed = land_batch(std::span(&item, 1));
  if (!landed) return std::unexpected(landed.error());
  last_rejected_ = landed->front().rows_rejected;
  return landed->front().outcome;
}

Result<std::vector<BatchLanded>> DatabricksSink::land_batch(std::span<const BatchToLand> parts) {
  SKIPPR_TRY(open());
  SKIPPR_TRY(finish_pending());
  const BatchId& id = parts.front().id;
  const bool several = tables_.per_stream();
  const std::string stem = file_stem(id);
  // A part's files carry its place in the batch (the WAL keeps the parts' order) between the stem and the suffix
  // when the batch may have several: a table's name may hold any character, and two may differ only in case.
  const auto part_stem = [&](const BatchToLand& part) {
    return several ? fmt::format("{}.{}", stem, &part - parts.data()) : stem;
  };
  const auto outcomes = [&](WriteOutcome outcome, const LandingFile* landing) {
    std::vector<BatchLanded> out(parts.size(), {outcome, 0});
    if (landing && landing->rejected_by_part.size() == parts.size()) {
      for (size_t i = 0; i < parts.size(); ++i) out[i].rows_rejected = landing->rejected_by_part[i];
    } else if (landing) {
      out.front().rows_rejected = landing->rejected;
    }
    return out;
  };
  for (const auto& part : parts) {
    // Every part's table is claimed before anything is sent: two streams that would share a table stop the batch
    // whole.
    SKIPPR_TRY(use_table_of(part.batch));
  }
  LandingFile landing;
  landing.batch_id = id.str();
  // The last part's ledger row is the landing's last statement: once it is there, every part landed.
  landing.landed_sql = ledger_has_sql(ledger(), target_of(tables_.table_for(parts.back().batch.stream)), id);
  // Only a batch an earlier attempt may have landed can be in the ledger; asking costs a round trip, so only then.
  if (std::ranges::any_of(parts, [](const BatchToLand& p) { return p.maybe_landed; })) {
    auto landed = held(landing.landed_sql);
    if (!landed) return std::unexpected(landed.error());
    if (*landed) {
      std::vector<std::string> files;
      for (const auto& part : parts) {
        files.push_back(part_stem(part) + std::string(kRowsSuffix));
        files.push_back(part_stem(part) + std::string(kRejectsSuffix));
      }
      files.push_back(stem + std::string(kLandingSuffix));
      remove_files(files);
      return outcomes(WriteOutcome::kAlreadyApplied, nullptr);
    }
    // An earlier attempt's landing file is its commitment: finished as written, not made again (this attempt's files
    // could differ from what it loaded already: a column widened in between changes which rows are rejected).
    auto earlier = read_landing(stem + std::string(kLandingSuffix));
    if (!earlier) return std::unexpected(earlier.error());
    if (*earlier) {
      SKIPPR_TRY(run_landing(**earlier));
      return outcomes(WriteOutcome::kApplied, &**earlier);
    }
  }
  for (const auto& part : parts) {
    SKIPPR_TRY(use_table_of(part.batch));
    if (!landing.statements.empty()) landing.part_starts.push_back(landing.statements.size());
    auto rejected = add_part(part, part_stem(part), landing);
    if (!rejected) return std::unexpected(rejected.error());
    landing.rejected += *rejected;
    if (several) landing.rejected_by_part.push_back(*rejected);
  }
  if (!landing.files.empty()) {
    // From here the batch is committed to the destination: whoever finds this file finishes it.
    landing.files.push_back(stem + std::string(kLandingSuffix));
    auto uploaded = client_.upload(folder_ + "/" + landing.files.back(), landing_file_json(landing, signing_key_));
    if (!uploaded) return std::unexpected(uploaded.error());
    if (*uploaded == UploadOutcome::kAlreadyThere) {
      // An earlier attempt committed first (its answer was lost): that landing file is the one to finish.
      auto earlier = read_landing(landing.files.back());
      if (!earlier) return std::unexpected(earlier.error());
      if (*earlier) landing = std::move(**earlier);
    }
  }
  SKIPPR_TRY(run_landing(landing));
  return outcomes(WriteOutcome::kApplied, &landing);
}

Result<uint64_t> DatabricksSink::add_part(const BatchToLand& item, const std::string& stem, LandingFile& landing) {
  const ColumnRules rules = dbx_column_rules();
  if (merging()) SKIPPR_TRY(check_merge_rows(item.batch, merge_key_, rules, where()));
  SKIPPR_TRY(prepare_table(item.batch));
  auto conformed = conform_batch(item.batch, known_.columns, rules, where());
  if (!conformed) return std::unexpected(conformed.error());
  const Batch& rows = *conformed ? (*conformed)->batch : item.batch;
  const std::vector<RejectedRow> rejected = *conformed ? (*conformed)->rejected : std::vector<RejectedRow>();

  // Without a landing file no statement has read these files yet: an earlier attempt's are replaced.
  auto put = [&](std::string_view suffix, const std::string& bytes) -> Status {
    const std::string name = stem + std::string(suffix);
    auto uploaded = client_.upload(folder_ + "/" + name, bytes, /*overwrite=*/true);
    if (!uploaded) return std::unexpected(uploaded.error());
    landing.files.push_back(name);
    return ok();
  };
  if (rows.rows > 0) {
    SKIPPR_TRY(put(kRowsSuffix, text_valued_json_lines(rows, merging() ? kRowNumberColumn : std::string_view())));
    const std::string rows_name = landing.files.back();
    if (merging()) {
      const std::string stage =
          fmt::format("(SELECT {} FROM read_files({}, format => 'json', primitivesAsString => true))",
                      converted_columns(rows.schema, /*keep_change_fields=*/true, /*row_numbers=*/true),
                      dbx_quote_literal(folder_ + "/" + rows_name));
      // A truncate's token as a literal: Databricks' DELETE takes no subquery nested in its condition.
      const MergeSql m{target(), tombstones(), stage, merge_key_, known_.columns, rules, std::string(kTokenType),
                       "EXCEPT", false,        true};
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
    if (!known_.rejects_ready) {
      SKIPPR_TRY(
          client_.execute(fmt::format("CREATE TABLE IF NOT EXISTS {} (batch_id STRING NOT NULL, `row` BIGINT "
                                      "NOT NULL, reason STRING, record STRING, rejected_at TIMESTAMP)",
                                      rejects())));
      known_.rejects_ready = true;
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
  return rejected.size();
}

}  // namespace

ConnectorSpec databricks_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Databricks";
  spec.is_source = false;
  spec.summary = "a Delta table on a Databricks SQL warehouse (files in a Unity Catalog volume + COPY INTO)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;        // a table per stream, one landing file per batch for all of them
  spec.max_identifier_bytes = 255;  // Unity Catalog column names hold 255 characters; counted in bytes to be safe
  spec.params = {
      {"host", ParamType::kString, true, nullptr, "the workspace host, e.g. dbc-1234abcd-5678.cloud.databricks.com"},
      {"token", ParamType::kString, true, nullptr, "a personal access token or OAuth token (a secret: use ${VAR})"},
      {"warehouse_id", ParamType::kString, true, nullptr, "the SQL warehouse that runs the statements"},
      {"catalog", ParamType::kString, false, "main", "the Unity Catalog catalog"},
      {"schema", ParamType::kString, false, "default", "the schema in the catalog"},
      {"table", ParamType::kString, false, nullptr,
       "the target table, created from the first batch; may hold {stream} (default for a source of several streams: "
       "{stream}, each stream in a table of its own)"},
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
    // The token travels in every request: in clear text only to this machine (a local emulator or proxy).
    const std::string origin = config.endpoint.empty() ? config.host : config.endpoint;
    const bool loopback = origin.starts_with("http://127.0.0.1") || origin.starts_with("http://localhost") ||
                          origin.starts_with("http://[::1]");
    if (origin.starts_with("http://") ? !loopback
                                      : origin.find("://") != std::string::npos && !origin.starts_with("https://")) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: {} must be an https:// origin (http:// only to this machine: the "
                              "token would travel in clear text)",
                              where, config.endpoint.empty() ? "host" : "endpoint"));
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
    auto tables = StreamTables::make(where, "table", StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    const std::string catalog = config.catalog, schema = config.schema, token = config.token;
    return std::make_unique<DatabricksSink>(DatabricksClient(std::move(config)), token, catalog, schema,
                                            std::move(*tables), volume, ctx.pipeline,
                                            ctx.landing == Landing::kMergeByKey, ctx.primary_key);
  };
  return spec;
}

}  // namespace skippr
