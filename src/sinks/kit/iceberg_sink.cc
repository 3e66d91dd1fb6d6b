#include "sinks/kit/iceberg_sink.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <regex>

#include "core/ascii.h"
#include "core/failpoint.h"

namespace skippr {

Status IcebergSink::open() {
  if (!tables_.per_stream()) {
    auto writer = writer_for(tables_.table_for(""));
    if (!writer) return std::unexpected(writer.error());
    return ok();
  }
  if (root_) return ok();
  auto root = make_root_store_();
  if (!root) return std::unexpected(root.error());
  root_ = std::move(*root);
  records_folder_ = landing_record_folder(tables_.pattern(), pipeline_);
  if (auto finished = finish_records(); !finished) {
    root_.reset();  // asked again on the next attempt
    return finished;
  }
  return ok();
}

Result<IcebergTableWriter*> IcebergSink::writer_for(const std::string& table) {
  if (auto found = writers_.find(table); found != writers_.end()) return found->second.get();
  auto writer = make_writer_(table);
  if (!writer) return std::unexpected(writer.error());
  SKIPPR_TRY((*writer)->open());
  if (tables_.per_stream()) {
    // One in-memory DuckDB for all of them: a pipeline may have a thousand tables.
    if (!parquet_) {
      auto parquet = ParquetFileWriter::open();
      if (!parquet) return std::unexpected(parquet.error());
      parquet_ = std::make_shared<ParquetFileWriter>(std::move(*parquet));
    }
    (*writer)->share_parquet(parquet_);
  }
  return writers_.emplace(table, std::move(*writer)).first->second.get();
}

Result<WriteOutcome> IcebergSink::write(const Batch& batch, const BatchId& id, const Position& position_after) {
  const BatchToLand item{batch, id, position_after};
  auto landed = write_group(std::span(&item, 1));
  if (!landed) return std::unexpected(landed.error());
  return landed->front().outcome;
}

Result<std::vector<BatchLanded>> IcebergSink::write_group(std::span<const BatchToLand> group) {
  SKIPPR_TRY(open());
  if (tables_.per_stream()) return land_tables(group);
  const std::string table = tables_.table_for("");
  auto writer = writer_for(table);
  if (!writer) return std::unexpected(writer.error());
  auto landed = (*writer)->land(group);
  if (!landed) return std::unexpected(landed.error());
  log_commit(**writer, table, group_ids(group));
  return landed;
}

Result<std::vector<BatchLanded>> IcebergSink::land_tables(std::span<const BatchToLand> group) {
  // The group's tables in the order their parts come, each with its parts (a batch has a part per stream). Every
  // table is claimed before anything is written: two streams that would share one stop the group whole.
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>, std::less<>> parts;
  for (size_t i = 0; i < group.size(); ++i) {
    // A part of no rows (a batch whose records were all dead letters, or a position alone) has nothing to land, and
    // may be of no stream: it needs no table.
    if (group[i].batch.rows == 0) continue;
    const std::string table = tables_.table_for(group[i].batch.stream);
    // Iceberg catalogs (Glue, Hive, most engines) compare table names without letter case: two streams whose tables
    // differ only in case would share one.
    SKIPPR_TRY(tables_.claim(group[i].batch.stream, table, ascii_lowercase));
    auto [it, added] = parts.try_emplace(table);
    if (added) order.push_back(table);
    it->second.push_back(i);
  }
  std::vector<BatchLanded> outcomes(group.size());
  IcebergLandingRecord record;
  std::vector<std::vector<size_t>> group_index;  // per table of the record: the group's index of each batch
  // Files no record names are no one's: a landing that stops before its record is written removes them.
  const auto discard_prepared = [&] {
    for (const auto& [table, landing] : record.tables) writers_.at(table)->discard_files(landing);
  };
  for (const auto& table : order) {
    auto writer = writer_for(table);
    if (!writer) {
      discard_prepared();
      return std::unexpected(writer.error());
    }
    std::vector<BatchToLand> items;
    for (size_t i : parts[table]) items.push_back(group[i]);
    auto prepared = (*writer)->prepare(items);
    if (!prepared) {
      discard_prepared();
      return std::unexpected(prepared.error());
    }
    for (size_t k = 0; k < items.size(); ++k) outcomes[parts[table][k]] = prepared->outcomes[k];
    if (prepared->landing.empty()) continue;
    std::vector<size_t> index;
    for (size_t k : prepared->group_index) index.push_back(parts[table][k]);
    group_index.push_back(std::move(index));
    record.tables.emplace_back(table, std::move(prepared->landing));
  }
  if (record.tables.empty()) return outcomes;
  // The group's batches come in order: its last is the newest, and so the pipeline's tip once the record is done.
  const BatchToLand& last = group.back();
  record.tip = {last.id.str(), last.position_after, last.id.epoch};
  const std::string name = landing_record_name(last.id);
  // From here the group is committed to the lake: whoever finds the record commits what is left of it.
  if (auto written = root_->write(records_folder_ + "/" + name, landing_record_json(record)); !written) {
    if (written.error().kind != ErrorKind::kUnknownOutcome) discard_prepared();
    return std::unexpected(written.error());
  }
  SKIPPR_TRY(commit_record(
      record, [&](size_t t, size_t i) { outcomes[group_index[t][i]].outcome = WriteOutcome::kAlreadyApplied; },
      /*earlier_run=*/false));
  tip_ = record.tip;
  keep_only_record(name);
  return outcomes;
}

Status IcebergSink::commit_record(const IcebergLandingRecord& record, const std::function<void(size_t, size_t)>& held,
                                  bool earlier_run) {
  for (size_t t = 0; t < record.tables.size(); ++t) {
    const auto& [table, landing] = record.tables[t];
    if (t > 0) failpoint::hit(failpoint::kSinkBetweenTables);
    const bool ours =
        std::ranges::all_of(landing.batches, [&](const PreparedBatch& b) { return b.id.pipeline == pipeline_; });
    if (!tables_.may_name(table) || !ours) {
      return fail(ErrorKind::kCorruption,
                  fmt::format("{}: the landing record of batch {} in {} names table '{}' or batches that are not "
                              "pipeline '{}''s (table: {}); it was not written by this pipeline",
                              what_, record.tip.batch_id, root_->where(), table, pipeline_, tables_.pattern()));
    }
    auto writer = writer_for(table);
    if (!writer) return std::unexpected(writer.error());
    auto committed = (*writer)->commit(landing);
    if (!committed) return std::unexpected(committed.error());
    if (committed->stale && !earlier_run) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("{}: another writer changed the columns or the partition layout of table '{}' after the "
                              "data files of batch {} were written; they are written again on the next attempt",
                              what_, table, record.tip.batch_id));
    }
    if (committed->stale) {
      // The rows are in the record's files only (the WAL that held them may be gone): nothing here can write them
      // again under the table's new ids, and skipping them would lose them.
      return fail(ErrorKind::kBadInput,
                  fmt::format("{}: table '{}' was changed by another writer (a field id of its data files now names "
                              "another column, or its partition layout changed) after an earlier run wrote the files "
                              "of batch {} listed in {}/{}; they cannot be committed as written. Undo the change to "
                              "the table's columns or partition spec and run again",
                              what_, table, record.tip.batch_id, root_->where(), records_folder_));
    }
    // Batches held already: by an earlier run of this pipeline (a record finished twice), or by another writer (a
    // lease handed over); the files of the landing this run wrote for them are never committed.
    if (!earlier_run) (*writer)->discard_files(landing, committed->held);
    for (size_t i = 0; i < committed->held.size(); ++i) {
      if (committed->held[i]) held(t, i);
    }
    if ((*writer)->last_commit().snapshot_id != 0 && earlier_run) {
      spdlog::warn("{}: finishing batch {} in table '{}', which an earlier run recorded but did not commit there",
                   what_, record.tip.batch_id, table);
    }
    log_commit(**writer, table, fmt::format("up to batch {}", record.tip.batch_id));
  }
  return ok();
}

Status IcebergSink::finish_records() {
  auto listed = root_->list(records_folder_);
  if (!listed) return std::unexpected(listed.error());
  static const std::regex kRecord(R"(.*/\d{20}-\d{20}\.json$)");
  std::vector<std::string> names;
  for (const auto& path : *listed) {
    if (std::regex_match(path, kRecord)) names.push_back(path.substr(path.rfind('/') + 1));
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const std::string path = records_folder_ + "/" + name;
    auto text = root_->read(path);
    if (!text) return std::unexpected(text.error());
    if (!*text) continue;
    auto record = parse_landing_record(**text, fmt::format("{}: {}", root_->where(), path));
    if (!record) return std::unexpected(record.error());
    // Finished records commit nothing (every table holds their batches); the newest gives the tip.
    SKIPPR_TRY(commit_record(
        *record, [](size_t, size_t) {}, /*earlier_run=*/true));
    tip_ = record->tip;
  }
  records_ = names;
  if (!names.empty()) keep_only_record(names.back());
  return ok();
}

void IcebergSink::keep_only_record(const std::string& name) {
  for (const auto& older : records_) {
    if (older == name) continue;
    if (auto removed = root_->remove(records_folder_ + "/" + older); !removed) {
      spdlog::debug("{}: landing record {} stays behind: {}", what_, older, removed.error().message);
    }
  }
  records_ = {name};
}

Result<std::optional<LedgerTip>> IcebergSink::ledger_tip() {
  SKIPPR_TRY(open());
  if (tables_.per_stream()) return tip_;
  auto writer = writer_for(tables_.table_for(""));
  if (!writer) return std::unexpected(writer.error());
  return (*writer)->ledger_tip(pipeline_);
}

void IcebergSink::log_commit(const IcebergTableWriter& writer, std::string_view table, std::string_view batches) const {
  const auto& r = writer.last_commit();
  if (r.snapshot_id != 0) {
    spdlog::debug("{}: table '{}' snapshot {} (version {}) with {} data file(s) for {}", what_, table, r.snapshot_id,
                  r.version, r.data_files, batches);
  }
  if (r.conflicts > 0) {
    spdlog::info("{}: {} commit(s) lost to another writer before version {} of '{}' was committed", what_, r.conflicts,
                 r.version, table);
  }
  if (r.manifests_merged > 0 || r.snapshots_expired > 0) {
    spdlog::info(
        "{}: table maintenance of '{}' at version {}: {} manifest(s) merged into one, {} old snapshot(s) "
        "expired",
        what_, table, r.version, r.manifests_merged, r.snapshots_expired);
  }
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

Result<std::unique_ptr<TableStore>> s3_lake_store(const AwsOptions& aws, const std::string& bucket,
                                                  const std::string& prefix, const std::string& table,
                                                  const std::string& what, bool& bucket_checked) {
  auto service = resolve_aws_service(aws, "s3", what);
  if (!service) return std::unexpected(service.error());
  S3Client client(std::move(*service));
  if (!bucket_checked) {
    SKIPPR_TRY(client.check_bucket(bucket));
    bucket_checked = true;
  }
  std::string key_prefix = prefix;
  if (!table.empty()) key_prefix = key_prefix.empty() ? table : key_prefix + "/" + table;
  return s3_table_store(std::move(client), bucket, key_prefix);
}

}  // namespace skippr
