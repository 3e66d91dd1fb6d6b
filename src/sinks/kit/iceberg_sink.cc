#include "sinks/kit/iceberg_sink.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace skippr {

Status IcebergSink::open() {
  if (writer_) return ok();
  auto writer = make_writer_();
  if (!writer) return std::unexpected(writer.error());
  SKIPPR_TRY((*writer)->open());
  writer_ = std::move(*writer);
  return ok();
}

Result<WriteOutcome> IcebergSink::write(const Batch& batch, const BatchId& id, const Position& position_after) {
  const BatchToLand item{batch, id, position_after};
  auto landed = write_group(std::span(&item, 1));
  if (!landed) return std::unexpected(landed.error());
  return landed->front().outcome;
}

Result<std::vector<BatchLanded>> IcebergSink::write_group(std::span<const BatchToLand> group) {
  SKIPPR_TRY(open());
  auto landed = writer_->land(group);
  if (!landed) return std::unexpected(landed.error());
  const auto& r = writer_->last_commit();
  if (r.snapshot_id != 0) {
    spdlog::debug("{}: snapshot {} (version {}) with {} data file(s) for {}", what_, r.snapshot_id, r.version,
                  r.data_files, group_ids(group));
  }
  if (r.conflicts > 0) {
    spdlog::info("{}: {} commit(s) lost to another writer before version {} was committed", what_, r.conflicts,
                 r.version);
  }
  if (r.manifests_merged > 0 || r.snapshots_expired > 0) {
    spdlog::info("{}: table maintenance at version {}: {} manifest(s) merged into one, {} old snapshot(s) expired",
                 what_, r.version, r.manifests_merged, r.snapshots_expired);
  }
  return landed;
}

Result<std::optional<LedgerTip>> IcebergSink::ledger_tip() {
  SKIPPR_TRY(open());
  return writer_->ledger_tip(pipeline_);
}

std::vector<ParamSpec> iceberg_table_params() {
  return {
      {"partition_by", ParamType::kStringList, false, nullptr,
       "the partition spec: field names (identity) or year(f), month(f), day(f), hour(f) of a date or timestamp"},
      {"max_snapshots", ParamType::kInt, false, 100, "snapshots kept in the table's metadata; older ones expire"},
      {"manifest_merge_count", ParamType::kInt, false, 100,
       "past this many manifests in a snapshot, the older ones are merged into one"},
      {"parquet_compression", ParamType::kString, false, "zstd", "uncompressed, snappy, gzip or zstd"},
  };
}

Result<IcebergWriterOptions> read_iceberg_table_options(const ConnectorContext& ctx, const std::string& what) {
  const auto& p = ctx.params;
  if (ctx.landing != Landing::kAppend) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: landing {} is not supported yet; use append", what, to_string(ctx.landing)));
  }
  IcebergWriterOptions o;
  o.what = what;
  auto partition_by = parse_partition_by(p.value("partition_by", std::vector<std::string>{}), what);
  if (!partition_by) return std::unexpected(partition_by.error());
  o.partition_by = std::move(*partition_by);
  o.max_snapshots = static_cast<int>(p.value("max_snapshots", int64_t{100}));
  o.manifest_merge_count = static_cast<int>(p.value("manifest_merge_count", int64_t{100}));
  o.parquet_compression = p.value("parquet_compression", std::string("zstd"));
  if (o.max_snapshots < 1 || o.manifest_merge_count < 2) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: max_snapshots must be at least 1 and manifest_merge_count at least 2", what));
  }
  static const std::vector<std::string> kCompressions = {"uncompressed", "snappy", "gzip", "zstd"};
  if (std::ranges::find(kCompressions, o.parquet_compression) == kCompressions.end()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: parquet_compression '{}' is not one of uncompressed, snappy, "
                                                "gzip, zstd",
                                                what, o.parquet_compression));
  }
  o.scratch_dir = ctx.pipeline_dir.empty() ? std::filesystem::temp_directory_path() / "skippr-lake"
                                           : ctx.pipeline_dir / "lake-scratch";
  return o;
}

}  // namespace skippr
