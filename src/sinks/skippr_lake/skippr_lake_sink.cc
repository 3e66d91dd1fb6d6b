#include "sinks/skippr_lake/skippr_lake_sink.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clients/aws/aws_params.h"
#include "clients/aws/s3_client.h"
#include "formats/iceberg/table_writer.h"

namespace skippr {
namespace {

struct SkipprLakeOptions {
  std::string what;
  std::string pipeline;
  std::string folder;  // a local table root, or
  std::string bucket;  // an S3 one: bucket and key prefix of the table
  std::string prefix;
  AwsOptions aws;
  IcebergWriterOptions writer;
};

class SkipprLakeSink final : public Sink {
 public:
  explicit SkipprLakeSink(SkipprLakeOptions options) : options_(std::move(options)) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  bool lands_groups() const override { return true; }

  Status open() override {
    if (writer_) return ok();
    std::unique_ptr<TableStore> store;
    if (!options_.bucket.empty()) {
      auto service = resolve_aws_service(options_.aws, "s3", options_.what);
      if (!service) return std::unexpected(service.error());
      S3Client client(std::move(*service));
      SKIPPR_TRY(client.check_bucket(options_.bucket));
      store = s3_table_store(std::move(client), options_.bucket, options_.prefix);
    } else {
      auto folder = folder_table_store(options_.folder);
      if (!folder) return std::unexpected(folder.error());
      store = std::move(*folder);
    }
    auto catalog = storage_catalog(*store);
    auto writer = std::make_unique<IcebergTableWriter>(options_.writer, std::move(store), std::move(catalog));
    SKIPPR_TRY(writer->open());
    writer_ = std::move(writer);
    return ok();
  }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) override {
    const BatchToLand item{batch, id, position_after};
    auto landed = write_group(std::span(&item, 1));
    if (!landed) return std::unexpected(landed.error());
    return landed->front().outcome;
  }

  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override {
    SKIPPR_TRY(open());
    auto landed = writer_->land(group);
    if (!landed) return std::unexpected(landed.error());
    const auto& r = writer_->last_commit();
    if (r.snapshot_id != 0) {
      spdlog::debug("{}: snapshot {} (v{}) with {} data file(s) for {}", options_.what, r.snapshot_id, r.version,
                    r.data_files, group_ids(group));
    }
    if (r.conflicts > 0) {
      spdlog::info("{}: {} commit(s) lost to another writer before v{} was committed", options_.what, r.conflicts,
                   r.version);
    }
    if (r.manifests_merged > 0 || r.snapshots_expired > 0) {
      spdlog::info("{}: table maintenance at v{}: {} manifest(s) merged into one, {} old snapshot(s) expired",
                   options_.what, r.version, r.manifests_merged, r.snapshots_expired);
    }
    return landed;
  }

  Result<std::optional<LedgerTip>> ledger_tip() override {
    SKIPPR_TRY(open());
    return writer_->ledger_tip(options_.pipeline);
  }

 private:
  SkipprLakeOptions options_;
  std::unique_ptr<IcebergTableWriter> writer_;
};

}  // namespace

ConnectorSpec skippr_lake_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "SkipprLake";
  spec.is_source = false;
  spec.summary = "an Apache Iceberg v2 table in a folder or on S3; each batch's id in its snapshot's summary";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.params = {
      {"path", ParamType::kString, true, nullptr, "the lake: a local folder, or s3://bucket/prefix"},
      {"table", ParamType::kString, true, nullptr, "the table's folder under path"},
      {"partition_by", ParamType::kStringList, false, nullptr,
       "the partition spec: field names (identity) or year(f), month(f), day(f), hour(f) of a date or timestamp"},
      {"max_snapshots", ParamType::kInt, false, 100, "snapshots kept in the table's metadata; older ones expire"},
      {"manifest_merge_count", ParamType::kInt, false, 100,
       "past this many manifests in a snapshot, the older ones are merged into one"},
      {"parquet_compression", ParamType::kString, false, "zstd", "uncompressed, snappy, gzip or zstd"},
  };
  for (auto& param : aws_connection_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    SkipprLakeOptions o;
    o.what = fmt::format("SkipprLake sink '{}'", ctx.name);
    o.pipeline = ctx.pipeline;
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: landing {} is not supported yet; use append", o.what, to_string(ctx.landing)));
    }
    const std::string path = p.value("path", std::string());
    const std::string table = p.value("table", std::string());
    if (table.empty() || table.find('/') != std::string::npos || table == "." || table == "..") {
      return fail(ErrorKind::kConfig, fmt::format("{}: table '{}' must be a plain name (no '/')", o.what, table));
    }
    if (path.starts_with("s3://")) {
      const std::string rest = path.substr(5);
      const auto slash = rest.find('/');
      o.bucket = rest.substr(0, slash);
      std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
      while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
      o.prefix = prefix.empty() ? table : prefix + "/" + table;
      if (o.bucket.empty()) {
        return fail(ErrorKind::kConfig,
                    fmt::format("{}: path '{}' names no bucket (s3://bucket/prefix)", o.what, path));
      }
      auto aws = read_aws_options(p, o.what);
      if (!aws) return std::unexpected(aws.error());
      o.aws = std::move(*aws);
    } else if (path.find("://") != std::string::npos) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: path '{}' must be a local folder or s3://bucket/prefix", o.what, path));
    } else {
      o.folder = (std::filesystem::path(path) / table).string();
    }
    auto partition_by = parse_partition_by(p.value("partition_by", std::vector<std::string>{}), o.what);
    if (!partition_by) return std::unexpected(partition_by.error());
    o.writer.what = o.what;
    o.writer.partition_by = std::move(*partition_by);
    o.writer.max_snapshots = static_cast<int>(p.value("max_snapshots", int64_t{100}));
    o.writer.manifest_merge_count = static_cast<int>(p.value("manifest_merge_count", int64_t{100}));
    o.writer.parquet_compression = p.value("parquet_compression", std::string("zstd"));
    if (o.writer.max_snapshots < 1 || o.writer.manifest_merge_count < 2) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: max_snapshots must be at least 1 and manifest_merge_count at least 2", o.what));
    }
    static const std::vector<std::string> kCompressions = {"uncompressed", "snappy", "gzip", "zstd"};
    if (std::ranges::find(kCompressions, o.writer.parquet_compression) == kCompressions.end()) {
      return fail(ErrorKind::kConfig, fmt::format("{}: parquet_compression '{}' is not one of uncompressed, snappy, "
                                                  "gzip, zstd",
                                                  o.what, o.writer.parquet_compression));
    }
    o.writer.scratch_dir = ctx.pipeline_dir.empty() ? std::filesystem::temp_directory_path() / "skippr-lake"
                                                    : ctx.pipeline_dir / "lake-scratch";
    return std::make_unique<SkipprLakeSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
