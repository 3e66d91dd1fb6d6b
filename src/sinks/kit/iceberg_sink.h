// What the Iceberg sinks (SkipprLake, AthenaIceberg) share: the sink around formats/iceberg/table_writer, which lands
// each group of batches as one snapshot and answers ledger_tip from the snapshot summary, and the parameters of the
// table layout. Each sink says only where the files and the catalog are (its writer for a table, and the lake's
// root).
//
// A source of several streams lands each stream in a table of its own ({stream} in `table`). Iceberg commits one
// table at a time, so each group is landed in two steps: every table's data files are written and listed in a
// landing record (iceberg_landing_record.h), then the tables are committed one after another. A run that stops
// between two commits leaves the record, and whoever finds it (a retry, or a run with a lost DATA_DIR, which also
// reads the pipeline's tip from the newest record) commits the rest from the files it names.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clients/aws/aws_params.h"
#include "core/connector.h"
#include "formats/iceberg/table_writer.h"
#include "sinks/kit/iceberg_landing_record.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {

class IcebergSink final : public Sink {
 public:
  // The writer of `table`: a stream's table, or the table as written for a source of one stream.
  using MakeWriter = std::function<Result<std::unique_ptr<IcebergTableWriter>>(const std::string& table)>;
  // The lake's root (the folder or prefix every table is under), where landing records are kept.
  using MakeRootStore = std::function<Result<std::unique_ptr<TableStore>>()>;
  IcebergSink(std::string what, std::string pipeline, StreamTables tables, MakeWriter make_writer,
              MakeRootStore make_root_store)
      : what_(std::move(what)),
        pipeline_(std::move(pipeline)),
        tables_(std::move(tables)),
        make_writer_(std::move(make_writer)),
        make_root_store_(std::move(make_root_store)) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  bool lands_groups() const override { return true; }
  Status open() override;
  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) override;
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;
  Result<std::optional<LedgerTip>> ledger_tip() override;

 private:
  Result<IcebergTableWriter*> writer_for(const std::string& table);
  // A group of a source of several streams: each table's files, the record, then each table's commit.
  Result<std::vector<BatchLanded>> land_tables(std::span<const BatchToLand> group);
  // Commits each table's landing of `record` that its table does not hold yet; `held(t, i)` is told of each batch
  // `i` of table `t` the table held already (landed by an earlier run, or by another writer). `earlier_run`: the record
  // was found, not just written (what it still commits is said).
  Status commit_record(const IcebergLandingRecord& record, const std::function<void(size_t, size_t)>& held,
                       bool earlier_run);
  // Once a process, before anything lands: commits what the records earlier runs left name, reads the tip from the
  // newest and removes the others.
  Status finish_records();
  // Keeps `name` (the newest record) and removes the older ones.
  void keep_only_record(const std::string& name);
  // What the writer's last commit to `table` did (of `batches`, for the log).
  void log_commit(const IcebergTableWriter& writer, std::string_view table, std::string_view batches) const;

  std::string what_;
  std::string pipeline_;
  StreamTables tables_;
  MakeWriter make_writer_;
  MakeRootStore make_root_store_;
  std::map<std::string, std::unique_ptr<IcebergTableWriter>, std::less<>> writers_;  // by table
  std::shared_ptr<ParquetFileWriter> parquet_;                                       // shared by the tables' writers
  // Streams only: the lake's root, the records' folder there, the records it holds (oldest first), and the tip.
  std::unique_ptr<TableStore> root_;
  std::string records_folder_;
  std::vector<std::string> records_;
  std::optional<LedgerTip> tip_;
};

// partition_by, max_snapshots, manifest_merge_count, parquet_compression.
std::vector<ParamSpec> iceberg_table_params();
// Those parameters of sink `ctx`, as the writer's options; kConfig naming `what` for a bad value or a landing other
// than append.
Result<IcebergWriterOptions> read_iceberg_table_options(const ConnectorContext& ctx, const std::string& what);
// The files of `table` in a lake under `prefix` (no leading or trailing '/') of an S3 bucket, or with "" the lake's
// root. The bucket is checked first, so a missing one is said before anything is written: once per sink, whatever
// its number of tables (`bucket_checked`, shared by the sink's stores, is set once it has been).
Result<std::unique_ptr<TableStore>> s3_lake_store(const AwsOptions& aws, const std::string& bucket,
                                                  const std::string& prefix, const std::string& table,
                                                  const std::string& what, bool& bucket_checked);

}  // namespace skippr
