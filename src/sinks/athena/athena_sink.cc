#include "sinks/athena/athena_sink.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "clients/aws/glue_client.h"
#include "core/ascii.h"
#include "formats/iceberg/glue_catalog.h"
#include "formats/iceberg/iceberg_schema.h"
#include "sinks/kit/s3_object_sink.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

// What Athena's Parquet tables are made of (Glue's StorageDescriptor for Hive's Parquet SerDe).
const nlohmann::json kParquetStorage = {
    {"InputFormat", "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"},
    {"OutputFormat", "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"},
    {"SerdeInfo", {{"SerializationLibrary", "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"}}}};

// "station=Central%20Park/day=2024-05-01/" -> {"Central Park", "2024-05-01"}.
std::vector<std::string> folder_values(const std::string& folder) {
  std::vector<std::string> values;
  size_t at = 0;
  while (at < folder.size()) {
    const size_t slash = folder.find('/', at);
    const std::string segment = folder.substr(at, slash - at);
    const std::string escaped = segment.substr(segment.find('=') + 1);
    std::string value;
    for (size_t i = 0; i < escaped.size(); ++i) {
      if (escaped[i] == '%' && i + 2 < escaped.size()) {
        value.push_back(static_cast<char>(std::stoi(escaped.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        value.push_back(escaped[i]);
      }
    }
    values.push_back(std::move(value));
    at = slash == std::string::npos ? folder.size() : slash + 1;
  }
  return values;
}

struct AthenaOptions {
  std::string database;
  StreamTables tables;  // one table, or a {stream} pattern: a Glue table per stream over the stream's folder
};

class AthenaSink final : public S3ObjectSink {
 public:
  AthenaSink(S3ObjectSinkOptions s3, AthenaOptions athena) : S3ObjectSink(std::move(s3)), athena_(std::move(athena)) {}

  Status open() override {
    SKIPPR_TRY(S3ObjectSink::open());
    if (glue_) return ok();
    auto service = resolve_aws_service(s3_options().aws, "glue", what());
    if (!service) return std::unexpected(service.error());
    GlueClient glue(std::move(*service));
    SKIPPR_TRY(glue.ensure_database(athena_.database));
    glue_.emplace(std::move(glue));
    return ok();
  }

 private:
  // The folder of the stream being landed (its objects are under the prefix's folder for it), or one of its
  // partition folders.
  std::string location(const std::string& folder = "") const {
    return fmt::format("s3://{}/{}{}", s3_options().bucket, stream_prefix_for(object_options().prefix, stream_),
                       folder);
  }

  std::string where() const { return fmt::format("Glue table {}.{}", athena_.database, table_); }

  // Points table_ and what is known of it at the Glue table of `stream`.
  Status use_table_of(const std::string& stream) {
    // Glue keeps names in lower case.
    const std::string table = ascii_lowercase(athena_.tables.table_for(stream));
    SKIPPR_TRY(athena_.tables.claim(stream, table, ascii_lowercase));
    stream_ = stream;
    table_ = table;
    known_ = &known_by_table_[table];
    return ok();
  }

  // The batch's fields that are columns (partition keys are folders, not columns in the files).
  std::vector<Field> data_fields(const Batch& batch) const {
    std::vector<Field> out;
    for (const auto& f : batch.schema.fields) {
      if (std::ranges::find(object_options().partition_by, f.name) == object_options().partition_by.end()) {
        out.push_back(f);
      }
    }
    return out;
  }

  nlohmann::json table_input(const nlohmann::json& columns) const {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : object_options().partition_by) keys.push_back({{"Name", k}, {"Type", "string"}});
    nlohmann::json storage = kParquetStorage;
    storage["Location"] = location();
    storage["Columns"] = columns;
    return {{"Name", table_},
            {"TableType", "EXTERNAL_TABLE"},
            {"Parameters", {{"classification", "parquet"}, {"EXTERNAL", "TRUE"}}},
            {"PartitionKeys", keys},
            {"StorageDescriptor", storage}};
  }

  Status before_objects(const Batch& batch) override {
    SKIPPR_TRY(use_table_of(batch.stream));
    bool all_known = true;
    for (const auto& f : data_fields(batch)) all_known = all_known && known_->columns.contains(f.name);
    if (all_known && known_->checked) return ok();
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto table = glue_->get_table(athena_.database, table_);
      if (!table) return std::unexpected(table.error());
      nlohmann::json columns = nlohmann::json::array();
      std::string version;
      if (*table) {
        SKIPPR_TRY(check_partition_keys(**table));
        columns = (*table)->value("StorageDescriptor", nlohmann::json::object()).value("Columns", columns);
        version = (*table)->value("VersionId", std::string());
      }
      bool added = false;
      for (const auto& f : data_fields(batch)) {
        const std::string type = glue_type(iceberg_type(f.type));
        const auto have = std::ranges::find_if(columns, [&](const auto& c) { return c.value("Name", "") == f.name; });
        if (have == columns.end()) {
          columns.push_back({{"Name", f.name}, {"Type", type}});
          added = true;
        } else if (have->value("Type", "") != type) {
          return fail(ErrorKind::kBadInput,
                      fmt::format("{}: field '{}' is {} in {} and {} in this batch; cast it at the source, or name "
                                  "another table",
                                  what(), f.name, have->value("Type", ""), where(), type));
        }
      }
      Result<GlueWrite> wrote = GlueWrite::kApplied;
      if (!*table) {
        wrote = glue_->create_table(athena_.database, table_input(columns));
      } else if (added) {
        wrote = glue_->update_table(athena_.database, table_input(columns), version);
      }
      if (!wrote) return std::unexpected(wrote.error());
      if (*wrote != GlueWrite::kApplied) continue;  // another writer changed the table: read it again
      known_->columns.clear();
      for (const auto& c : columns) known_->columns.insert(c.value("Name", ""));
      known_->checked = true;
      return ok();
    }
    return fail(ErrorKind::kUnavailable,
                fmt::format("{}: {} kept changing while its columns were added", what(), where()));
  }

  Status check_partition_keys(const nlohmann::json& table) const {
    std::vector<std::string> keys;
    for (const auto& k : table.value("PartitionKeys", nlohmann::json::array())) keys.push_back(k.value("Name", ""));
    if (keys == object_options().partition_by) return ok();
    return fail(ErrorKind::kConfig,
                fmt::format("{}: {} is partitioned by [{}], and partition_by says [{}]; make them "
                            "agree",
                            what(), where(), fmt::join(keys, ", "), fmt::join(object_options().partition_by, ", ")));
  }

  Status after_objects(const std::vector<std::string>& folders) override {
    std::vector<nlohmann::json> partitions;
    std::vector<std::string> fresh;
    for (const auto& folder : folders) {
      if (folder.empty() || known_->registered.contains(folder)) continue;
      nlohmann::json storage = kParquetStorage;
      storage["Location"] = location(folder);
      partitions.push_back({{"Values", folder_values(folder)}, {"StorageDescriptor", storage}});
      fresh.push_back(folder);
    }
    if (partitions.empty()) return ok();
    SKIPPR_TRY(glue_->create_partitions(athena_.database, table_, partitions));
    known_->registered.insert(fresh.begin(), fresh.end());
    return ok();
  }

  AthenaOptions athena_;
  std::optional<GlueClient> glue_;
  struct Known {
    bool checked = false;
    std::set<std::string> columns;
    std::set<std::string> registered;  // partition folders this process registered
  };
  std::map<std::string, Known, std::less<>> known_by_table_;
  // The stream being landed (before_objects), its Glue table, and what is known of that table.
  std::string stream_, table_;
  Known* known_ = nullptr;
};

}  // namespace

ConnectorSpec athena_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Athena";
  spec.is_source = false;
  spec.summary = "Hive-partitioned Parquet on S3 with its AWS Glue table and partitions (Athena); one object per batch";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.lands_streams = true;        // a Glue table per stream, over the stream's folder of the prefix
  spec.max_identifier_bytes = 255;  // Glue column names hold 255 characters; counted in bytes to be safe
  spec.params = s3_object_sink_params(/*with_format=*/false);
  spec.params.push_back({"database", ParamType::kString, true, nullptr, "the Glue database (created if missing)"});
  spec.params.push_back({"table", ParamType::kString, false, nullptr,
                         "the Glue table (created by the first batch); may hold {stream} (default for a source of "
                         "several streams: {stream}, a table per stream over the stream's folder of prefix)"});
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    auto s3 = read_s3_object_sink_options(ctx, "Athena");
    if (!s3) return std::unexpected(s3.error());
    auto tables =
        StreamTables::make(s3->object.what, "table", StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    AthenaOptions o{ctx.params.value("database", std::string()), std::move(*tables)};
    SKIPPR_TRY(check_glue_name(s3->object.what, o.database));
    // A stream's table is the pattern with a plain name in it: checked with one.
    SKIPPR_TRY(check_glue_name(s3->object.what, o.tables.table_for(o.tables.per_stream() ? "x" : "")));
    // Without a prefix: the table's own folder; for a table pattern, the pattern's with each stream's folder in it
    // (raw_{stream}/), so sinks of other patterns in the bucket keep to their own folders.
    if (StreamTables::given(ctx.params, "prefix").value_or("").empty()) s3->object.prefix = o.tables.pattern() + "/";
    return std::make_unique<AthenaSink>(std::move(*s3), std::move(o));
  };
  return spec;
}

}  // namespace skippr
