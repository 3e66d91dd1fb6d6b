// What the Iceberg sinks (SkipprLake, AthenaIceberg) share: the sink around formats/iceberg/table_writer, which lands
// each group of batches as one snapshot and answers ledger_tip from the snapshot summary, and the parameters of the
// table layout. Each sink says only where the files and the catalog are (its `open` makes the writer).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/connector.h"
#include "formats/iceberg/table_writer.h"

namespace skippr {

class IcebergSink final : public Sink {
 public:
  using MakeWriter = std::function<Result<std::unique_ptr<IcebergTableWriter>>()>;
  IcebergSink(std::string what, std::string pipeline, MakeWriter make_writer)
      : what_(std::move(what)), pipeline_(std::move(pipeline)), make_writer_(std::move(make_writer)) {}

  Guarantee guarantee() const override { return Guarantee::kExactlyOnce; }
  bool keeps_ledger() const override { return true; }
  bool lands_groups() const override { return true; }
  Status open() override;
  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) override;
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override;
  Result<std::optional<LedgerTip>> ledger_tip() override;

 private:
  std::string what_;
  std::string pipeline_;
  MakeWriter make_writer_;
  std::unique_ptr<IcebergTableWriter> writer_;
};

// partition_by, max_snapshots, manifest_merge_count, parquet_compression.
std::vector<ParamSpec> iceberg_table_params();
// Those parameters of sink `ctx`, as the writer's options; kConfig naming `what` for a bad value or a landing other
// than append.
Result<IcebergWriterOptions> read_iceberg_table_options(const ConnectorContext& ctx, const std::string& what);

}  // namespace skippr
