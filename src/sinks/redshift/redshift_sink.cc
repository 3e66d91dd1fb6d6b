#include "sinks/redshift/redshift_sink.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "clients/aws/aws_params.h"
#include "clients/aws/s3_client.h"
#include "clients/postgres/pg_client.h"
#include "core/ascii.h"
#include "core/change_fields.h"
#include "core/failpoint.h"
#include "formats/compression.h"
#include "formats/object_encoding.h"
#include "sinks/kit/batch_ledger.h"
#include "sinks/kit/merge_sql.h"
#include "sinks/kit/staged_load.h"
#include "sinks/kit/stream_tables.h"
#include "sinks/redshift/redshift_merge.h"

namespace skippr {
namespace {

// Redshift folds identifiers to lower case (quoted or not, unless enable_case_sensitive_identifier is on), so the
// sink writes them lower-cased: what it creates is what it finds.
std::string rs_folded(std::string_view name) { return ascii_lowercase(name); }
std::string rs_name(std::string_view name) { return pg_quote_identifier(rs_folded(name)); }

const char* rs_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "BOOLEAN";
    case Type::kInt64:
      return "BIGINT";
    case Type::kDouble:
      return "DOUBLE PRECISION";
    case Type::kTimestamp:
      return "TIMESTAMPTZ";
    case Type::kDate:
      return "DATE";
    case Type::kString:
    case Type::kJson:
    case Type::kBinary:
      return "VARCHAR(65535)";  // JSON as text; binary as its base64 (the CSV encoder's)
  }
  return "VARCHAR(65535)";
}

// Standard SQL quoting (a quote doubled). Redshift's literals and PostgreSQL's agree on it for text without
// backslashes, which is what the sink quotes (names, S3 URLs, role ARNs, BatchIds, source positions).
std::string rs_literal(std::string_view text) { return pg_quote_literal(text); }

struct RedshiftConfig {
  std::string schema;
  StreamTables tables;  // where each stream lands: one table, or a {stream} pattern (sinks/kit/stream_tables.h)
  std::string table;    // folded; the table being landed in (use_table_of)
  std::string bucket;
  std::string prefix;  // the staging folder: <s3_prefix><schema>.<table>/ (the pattern's, {stream} as _streams_)
  std::string iam_role;
  // The sink's `region`, when given: COPY's REGION, which Redshift requires when the bucket is in another region
  // than the cluster (it never hurts when they are the same). Empty: COPY assumes the cluster's region.
  std::string copy_region;
  AwsService s3;
  bool merge = false;                     // landing: merge_by_key
  std::vector<std::string> pipeline_key;  // the pipeline's primary_key (empty: each batch carries its own)
  std::vector<std::string> primary_key;   // folded: the key of the batch being landed
};

constexpr std::string_view kStageTable = "_skippr_stage";
constexpr std::string_view kLatestTable = "_skippr_latest";

// The staged form of a merged batch: its rows numbered (the derived order token and the tie breaker need them).
Batch with_row_numbers(const Batch& batch) {
  Batch out = batch;
  Column numbers(Type::kInt64);
  numbers.reserve(batch.rows);
  for (size_t row = 0; row < batch.rows; ++row) numbers.append_int(static_cast<int64_t>(row));
  out.schema.fields.push_back({std::string(kRowNumberColumn), Type::kInt64});
  out.columns.push_back(std::move(numbers));
  return out;
}

class RedshiftSink final : public GroupLandingSink {
 public:
  RedshiftSink(const ConnectorContext& ctx, RedshiftConfig config)
      : params_(ctx.params),
        what_(fmt::format("sink '{}'", ctx.name)),
        pipeline_(ctx.pipeline),
        config_(std::move(config)),
        s3_(config_.s3) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  Status open() override;
  Result<std::optional<LedgerTip>> ledger_tip() override;
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;

 private:
  std::string target() const { return rs_name(config_.schema) + "." + rs_name(config_.table); }
  std::string where() const { return fmt::format("{}: Redshift table {}", what_, target()); }
  bool merging() const { return config_.merge; }
  // Points the table (and what is known of its columns) at the one `batch`'s stream lands in, and the key at its
  // own. No round trip: the columns are looked up when first needed.
  Status use_table_of(const Batch& batch);
  std::string tombstones_name() const { return rs_name(config_.table + std::string(kTombstoneSuffix)); }
  // The batch has every key field, no null key, and readable change fields.
  Status check_merge_rows(const Batch& batch) const;
  RedshiftMerge merge_names(const Batch& batch) const;
  Status apply_merge(const BatchToLand& item, const std::string& copy_options);
  LedgerDialect ledger() const {
    return {rs_name(config_.schema) + ".", "table_schema = " + rs_literal(config_.schema), rs_literal, "VARCHAR(65535)",
            "BIGINT"};
  }
  // The staged object of a batch (of one of its streams: the stream's table in its name), and the prefix all of this
  // pipeline's share.
  std::string staged_key(const BatchToLand& item) const {
    return config_.prefix + staged_csv_name(item, config_.tables.per_stream()
                                                      ? rs_folded(config_.tables.table_for(item.batch.stream))
                                                      : std::string());
  }
  std::string pipeline_prefix() const { return config_.prefix + pipeline_ + "-"; }
  // The bucket's staging folder, for sinks/kit/staged_load.
  StagingArea staging() {
    return {fmt::format("{}: staging in s3://{}", where(), config_.bucket),
            [this](const std::string& name, const std::string& body) {
              return s3_.put_object(config_.bucket, name, body, "application/gzip");
            },
            [this](const std::string& name) { return s3_.delete_object(config_.bucket, name); },
            [this](const std::string& prefix) -> Result<std::vector<std::string>> {
              auto objects = s3_.list_objects(config_.bucket, prefix);
              if (!objects) return std::unexpected(objects.error());
              std::vector<std::string> names;
              for (const S3Object& o : *objects) names.push_back(o.key);
              return names;
            }};
  }
  Result<std::set<std::string>> columns();
  Status prepare_table(const Batch& batch);
  Result<uint64_t> land_batch(const BatchToLand& item);
  Result<std::vector<BatchLanded>> write_in_transaction(std::span<const BatchToLand> group);

  nlohmann::json params_;
  std::string what_;
  std::string pipeline_;
  RedshiftConfig config_;
  S3Client s3_;
  std::optional<PgConnection> conn_;
  std::set<std::string> columns_;                       // the target's, lower-case, as this connection last saw them
  KnownPerTable<std::set<std::string>> other_columns_;  // the same of the other stream tables
};

Status RedshiftSink::use_table_of(const Batch& batch) {
  if (merging()) {
    const auto& key = merge_key_of(batch, config_.pipeline_key);
    if (key.empty()) return no_merge_key(batch, where());
    config_.primary_key.clear();
    for (const auto& k : key) config_.primary_key.push_back(rs_folded(k));
  }
  // Names are folded to lower case: Orders and orders are one table. Columns are read again when needed.
  auto entered = other_columns_.enter(config_.tables, batch.stream, rs_folded(config_.tables.table_for(batch.stream)),
                                      rs_folded, config_.table, columns_);
  if (!entered) return std::unexpected(entered.error());
  return ok();
}

Status RedshiftSink::open() {
  if (conn_ && !conn_->broken()) return ok();
  conn_.reset();
  auto conn = PgConnection::connect(params_, what_);
  if (!conn) return std::unexpected(conn.error());
  auto prefixed = [&](const Error& e) { return fail(e.kind, fmt::format("{}: {}", where(), e.message)); };
  if (auto st = conn->execute(fmt::format("CREATE SCHEMA IF NOT EXISTS {}", rs_name(config_.schema))); !st) {
    return prefixed(st.error());
  }
  if (auto st = conn->execute(ledger_create_sql(ledger())); !st && conn->last_sqlstate() != "23505") {
    return prefixed(st.error());
  }
  conn_ = std::move(*conn);
  columns_.clear();
  other_columns_.clear();
  return sweep_staged(staging(), pipeline_prefix());
}

Result<std::optional<LedgerTip>> RedshiftSink::ledger_tip() {
  SKIPPR_TRY(open());
  auto rows =
      conn_->query(config_.tables.per_stream()
                       ? ledger_tip_any_table_sql(ledger(), config_.tables.target_like([this](std::string_view t) {
                           return rs_name(config_.schema) + "." + rs_name(t);
                         }),
                                                  pipeline_)
                       : ledger_tip_sql(ledger(), target(), pipeline_),
                   {});
  if (!rows) return std::unexpected(rows.error());
  return ledger_tip_of(rows->rows);
}

Result<std::set<std::string>> RedshiftSink::columns() {
  auto rows =
      conn_->query("SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
                   {config_.schema, config_.table});
  if (!rows) return std::unexpected(rows.error());
  std::set<std::string> names;
  for (const auto& row : rows->rows) names.insert(row[0].value_or(""));
  return names;
}

// Creates the table from the batch, or adds the batch's new fields as nullable columns.
Status RedshiftSink::prepare_table(const Batch& batch) {
  if (columns_.empty()) {
    auto names = columns();
    if (!names) return std::unexpected(names.error());
    columns_ = std::move(*names);
  }
  if (columns_.empty()) {
    std::string definition;
    for (const Field& field : batch.schema.fields) {
      if (merging() && is_change_field(field.name)) continue;
      if (!definition.empty()) definition += ", ";
      definition += fmt::format("{} {}", rs_name(field.name), rs_type(field.type));
    }
    if (merging()) definition += fmt::format(", {} {}", rs_name(kOrderColumn), kRedshiftTokenType);
    SKIPPR_TRY(conn_->execute(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", target(), definition)));
  } else {
    for (const Field& field : batch.schema.fields) {
      if (columns_.contains(rs_folded(field.name)) || (merging() && is_change_field(field.name))) continue;
      SKIPPR_TRY(conn_->execute(
          fmt::format("ALTER TABLE {} ADD COLUMN {} {}", target(), rs_name(field.name), rs_type(field.type))));
    }
    // A table appended to before: its rows have no order token, so any change replaces them.
    if (merging() && !columns_.contains(std::string(kOrderColumn))) {
      SKIPPR_TRY(conn_->execute(
          fmt::format("ALTER TABLE {} ADD COLUMN {} {}", target(), rs_name(kOrderColumn), kRedshiftTokenType)));
    }
  }
  for (const Field& field : batch.schema.fields) columns_.insert(rs_folded(field.name));
  if (merging()) columns_.insert(std::string(kOrderColumn));
  return ok();
}

Status RedshiftSink::check_merge_rows(const Batch& batch) const {
  std::vector<size_t> key_fields;
  for (const auto& key : config_.primary_key) {
    auto field = std::ranges::find_if(batch.schema.fields, [&](const Field& f) { return rs_folded(f.name) == key; });
    if (field == batch.schema.fields.end()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: the batch has no field {} named in the pipeline's primary_key; fix primary_key",
                              where(), rs_name(key)));
    }
    key_fields.push_back(static_cast<size_t>(field - batch.schema.fields.begin()));
  }
  return check_change_fields(batch, key_fields, where());
}

RedshiftMerge RedshiftSink::merge_names(const Batch& batch) const {
  RedshiftMerge m;
  m.table = target();
  m.table_name = rs_name(config_.table);
  m.tombstones = rs_name(config_.schema) + "." + tombstones_name();
  m.tombstones_name = tombstones_name();
  m.stage = rs_name(kStageTable);
  m.latest = rs_name(kLatestTable);
  for (const auto& key : config_.primary_key) {
    m.keys.push_back(rs_name(key));
    auto field = std::ranges::find_if(batch.schema.fields, [&](const Field& f) { return rs_folded(f.name) == key; });
    m.key_types.push_back(rs_type(field->type));
  }
  for (const Field& field : batch.schema.fields) {
    if (!is_change_field(field.name)) m.data.push_back(rs_name(field.name));
  }
  m.order = rs_name(kOrderColumn);
  m.row = rs_name(kRowNumberColumn);
  m.op = rs_name(kOpField);
  return m;
}

// The batch is copied into a temp stage (dropped first: Redshift keeps a temp table until the session ends, and a
// group stages one batch after another), then merged into the target.
Status RedshiftSink::apply_merge(const BatchToLand& item, const std::string& copy_options) {
  const Batch staged = with_row_numbers(item.batch);
  std::string definition, columns;
  for (const Field& field : staged.schema.fields) {
    definition += fmt::format("{}{} {}", definition.empty() ? "" : ", ", rs_name(field.name),
                              field.name == kRowNumberColumn ? "BIGINT" : rs_type(field.type));
    columns += (columns.empty() ? "" : ", ") + rs_name(field.name);
  }
  SKIPPR_TRY(conn_->execute(fmt::format("DROP TABLE IF EXISTS {}", rs_name(kStageTable))));
  SKIPPR_TRY(conn_->execute(fmt::format("CREATE TEMP TABLE {} ({})", rs_name(kStageTable), definition)));
  SKIPPR_TRY(conn_->execute(fmt::format("COPY {} ({}) FROM {}", rs_name(kStageTable), columns, copy_options)));
  for (const auto& sql : redshift_merge_sql(merge_names(item.batch), item.batch, item.id)) {
    SKIPPR_TRY(conn_->execute(sql));
  }
  return ok();
}

Result<uint64_t> RedshiftSink::land_batch(const BatchToLand& item) {
  const BatchId& id = item.id;
  SKIPPR_TRY(use_table_of(item.batch));
  auto failed = [&](const Error& e) {
    if (e.message.find("PermanentRedirect") != std::string::npos) {
      // S3 sends the cluster elsewhere: the staging bucket is in another region, which COPY must be told.
      return fail(ErrorKind::kConfig, fmt::format("writing batch {} to {}: {} (the bucket {} is not in the cluster's "
                                                  "region: set the sink's region to the bucket's)",
                                                  id.str(), where(), e.message, config_.bucket));
    }
    return fail(e.kind, fmt::format("writing batch {} to {}: {}", id.str(), where(), e.message));
  };
  if (item.batch.rows > 0) {
    if (auto st = prepare_table(item.batch); !st) return failed(st.error());
    const std::string copy_options = fmt::format(
        "{} IAM_ROLE {}{} FORMAT AS CSV GZIP IGNOREHEADER 1 TIMEFORMAT 'auto' DATEFORMAT 'auto'",
        rs_literal(fmt::format("s3://{}/{}", config_.bucket, staged_key(item))), rs_literal(config_.iam_role),
        config_.copy_region.empty() ? "" : " REGION " + rs_literal(config_.copy_region));
    if (merging()) {
      if (auto st = apply_merge(item, copy_options); !st) return failed(st.error());
    } else {
      std::string columns;
      for (const Field& field : item.batch.schema.fields) {
        columns += (columns.empty() ? "" : ", ") + rs_name(field.name);
      }
      if (auto st = conn_->execute(fmt::format("COPY {} ({}) FROM {}", target(), columns, copy_options)); !st) {
        return failed(st.error());
      }
    }
  }
  failpoint::hit(failpoint::kSinkInTransaction);
  if (auto st = conn_->execute(ledger_insert_sql(ledger(), target(), id, item.batch.rows, item.position_after)); !st) {
    return failed(st.error());
  }
  return uint64_t{0};
}

Result<std::vector<BatchLanded>> RedshiftSink::write_in_transaction(std::span<const BatchToLand> group) {
  // Before COMMIT a failure is definite (the transaction rolls back), except a lost connection: an unknown outcome,
  // which the engine retries with the same BatchIds, and the ledger decides.
  auto failed = [&](const Error& e) { return fail(conn_->broken() ? ErrorKind::kUnknownOutcome : e.kind, e.message); };
  PgTransaction tx(*conn_);
  if (auto st = tx.begin(); !st) return failed(st.error());
  auto has = [&](const BatchToLand& item) -> Result<bool> {
    SKIPPR_TRY(use_table_of(item.batch));
    auto rows = conn_->query(ledger_has_sql(ledger(), target(), item.id), {});
    if (!rows) return std::unexpected(rows.error());
    return !rows->rows.empty();
  };
  auto landed = land_new_batches(group, has, [&](const BatchToLand& item) { return land_batch(item); });
  if (!landed) return failed(landed.error());
  if (all_already_applied(*landed)) return landed;
  if (auto st = tx.commit(); !st) {
    if (conn_->broken()) {
      return fail(ErrorKind::kUnknownOutcome,
                  fmt::format("committing {} to {}: {}", group_ids(group), where(), st.error().message));
    }
    return failed(st.error());
  }
  return landed;
}

Result<std::vector<BatchLanded>> RedshiftSink::write_group(std::span<const BatchToLand> group) {
  for (const auto& item : group) {
    SKIPPR_TRY(item.batch.check_shape());
    SKIPPR_TRY(use_table_of(item.batch));
    if (merging()) SKIPPR_TRY(check_merge_rows(item.batch));
  }
  SKIPPR_TRY(open());
  auto landed = land_through_stage(
      group, staging(), [this](const BatchToLand& item) { return staged_key(item); },
      [this](const BatchToLand& item) {
        return staged_csv_gzip(merging() ? with_row_numbers(item.batch) : item.batch);
      },
      [&] { return write_in_transaction(group); });
  if (!landed) {
    columns_.clear();  // DDL of the rolled-back transaction is gone too: look at the tables again
    other_columns_.clear();
    if (conn_ && conn_->broken()) conn_.reset();  // the next attempt reconnects
  }
  return landed;
}

}  // namespace

ConnectorSpec redshift_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Redshift";
  spec.is_source = false;
  spec.summary = "an Amazon Redshift table, loaded by COPY from S3 (staged per batch)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;        // all of a batch's tables in one transaction
  spec.max_identifier_bytes = 127;  // Redshift refuses names over 127 bytes
  spec.params = pg_connection_params();
  for (ParamSpec& p : spec.params) {
    if (p.name == "port" && p.default_value.is_null()) p.default_value = 5439;
  }
  std::vector<ParamSpec> own = {
      {"schema", ParamType::kString, false, "public", "the target's schema; created when absent"},
      {"table", ParamType::kString, false, nullptr,
       "the target table; created from the first batch's schema. May hold {stream} (default for a source of several "
       "streams: {stream}, each stream in a table of its own)"},
      {"s3_bucket", ParamType::kString, true, nullptr, "where batches are staged for COPY"},
      {"s3_prefix", ParamType::kString, false, "skippr-staging/", "the staging folder's prefix in s3_bucket"},
      {"iam_role", ParamType::kString, true, nullptr,
       "the ARN of the role Redshift assumes to read the staged objects (arn:aws:iam::<account>:role/<name>)"},
  };
  spec.params.insert(spec.params.end(), own.begin(), own.end());
  for (ParamSpec p : aws_connection_params()) {
    if (p.name == "endpoint") p.doc = "the S3 endpoint for staging (AWS_ENDPOINT_URL_S3 otherwise)";
    spec.params.push_back(std::move(p));
  }
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string where = fmt::format("sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend && ctx.landing != Landing::kMergeByKey) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: landing {} is not in this build of the Redshift sink (append and merge_by_key "
                              "only); use one of those",
                              where, to_string(ctx.landing)));
    }
    RedshiftConfig config;
    auto tables = StreamTables::make(where, "table", StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    config.tables = std::move(*tables);
    // Folded once: the catalog lookups, the ledger's scope and the staging prefix then all use Redshift's names.
    config.schema = rs_folded(ctx.params.value("schema", std::string("public")));
    config.table = rs_folded(config.tables.pattern());
    config.bucket = ctx.params.value("s3_bucket", std::string());
    config.iam_role = ctx.params.value("iam_role", std::string());
    config.merge = ctx.landing == Landing::kMergeByKey;
    config.pipeline_key = ctx.primary_key;  // the config refuses merge_by_key without one unless the source keys
    if (config.table.empty() || config.bucket.empty() || config.iam_role.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("{}: Redshift needs table, s3_bucket and iam_role", where));
    }
    if (config.iam_role.rfind("arn:aws:iam::", 0) != 0 || config.iam_role.find(":role/") == std::string::npos) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: iam_role '{}' is not a role ARN (arn:aws:iam::<account>:role/<name>)", where,
                              config.iam_role));
    }
    std::string prefix = ctx.params.value("s3_prefix", std::string("skippr-staging/"));
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    config.prefix = fmt::format("{}{}.{}/", prefix, config.schema, tables_as_one_name(config.table));
    auto options = read_aws_options(ctx.params, where);
    if (!options) return std::unexpected(options.error());
    config.copy_region = options->region;
    auto s3 = resolve_aws_service(*options, "s3", where);
    if (!s3) return std::unexpected(s3.error());
    config.s3 = std::move(*s3);
    return std::make_unique<RedshiftSink>(ctx, std::move(config));
  };
  return spec;
}

}  // namespace skippr
