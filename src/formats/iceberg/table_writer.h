// Lands committed batches into an Apache Iceberg v2 table exactly once, whatever the catalog (SkipprLake's files,
// AthenaIceberg's Glue): a group of batches becomes Parquet data files with Iceberg field ids, one manifest, a
// manifest list and one snapshot whose summary records the group's BatchIds (formats/iceberg/summary_ledger.h).
// A batch the current snapshot's ledger holds is not written again; a commit that loses the race to another
// writer reloads the table and commits on the new base. Metadata stays bounded: manifests are merged past a count,
// snapshots past a count are expired from the metadata.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/connector.h"
#include "formats/batch_encoders.h"
#include "formats/iceberg/catalog.h"
#include "formats/iceberg/iceberg_schema.h"
#include "formats/iceberg/manifests.h"
#include "formats/iceberg/partition_spec.h"
#include "formats/iceberg/prepared_landing.h"
#include "formats/iceberg/summary_ledger.h"
#include "formats/iceberg/table_store.h"

namespace skippr {

struct IcebergWriterOptions {
  std::string what;  // "SkipprLake sink 'lake'": the start of every message
  std::vector<PartitionRequest> partition_by;
  std::filesystem::path scratch_dir;  // Parquet's scratch files
  std::string parquet_compression = "zstd";
  // More manifests than this in a snapshot: the older ones are merged into one (Iceberg's
  // commit.manifest.min-count-to-merge).
  int manifest_merge_count = 100;
  // Snapshots kept in the metadata; older ones are expired from it (their data files stay: they are live).
  int max_snapshots = 100;
  // Entries of metadata-log kept (Iceberg's write.metadata.previous-versions-max).
  int max_previous_versions = 100;
};

// What the last commit did, for the sink's log.
struct IcebergCommitReport {
  int64_t snapshot_id = 0;
  int64_t version = 0;
  int data_files = 0;
  int conflicts = 0;         // commits lost to another writer before this one won
  int manifests_merged = 0;  // manifests folded into one
  int snapshots_expired = 0;
};

class IcebergTableWriter {
 public:
  IcebergTableWriter(IcebergWriterOptions options, std::unique_ptr<TableStore> store,
                     std::unique_ptr<IcebergCatalog> catalog);
  ~IcebergTableWriter();
  // Checks what can be checked before anything lands: the table, if it exists, has a layout this writer can append
  // to (partition_by matches its spec). kConfig otherwise.
  Status open();
  Result<std::optional<LedgerTip>> ledger_tip(std::string_view pipeline);
  // One snapshot for the batches of `group` the table does not hold yet; one outcome per batch. A landing that fails
  // before its commit removes the files it wrote; the first one that commits sweeps the data files of killed
  // landings (orphan_files.h).
  Result<std::vector<BatchLanded>> land(std::span<const BatchToLand> group);

  // land()'s two steps, for a sink that records the landing between them (a batch of several tables:
  // sinks/kit/iceberg_sink.h). prepare writes the data files of the batches of `group` the table does not hold yet
  // and gives them (outcomes: kAlreadyApplied for the others); they are the caller's from then on.
  struct Prepared {
    std::vector<BatchLanded> outcomes;  // one per batch of the group
    PreparedLanding landing;
    std::vector<size_t> group_index;  // the group's index of each of landing's batches
  };
  Result<Prepared> prepare(std::span<const BatchToLand> group);
  // Commits `landing`'s batches that the table does not hold yet as one snapshot. It removes no data file: those of
  // batches the table holds may be the ones committed (a record finished twice), and a failure leaves the rest to the
  // caller's record; the sweep of files no snapshot names takes what is left over.
  struct Committed {
    // The table's columns or partition layout changed since the files were written (another writer): they cannot be
    // committed; prepare the batches again.
    bool stale = false;
    std::vector<bool> held;  // per batch of the landing: held before this commit (not committed by it)
  };
  Result<Committed> commit(const PreparedLanding& landing);
  // Removes the data files of `landing`'s batches (of those `which` marks, when it is not empty): a landing that will
  // never be committed (its record was not written), or batches another writer landed first. Best effort.
  void discard_files(const PreparedLanding& landing, const std::vector<bool>& which = {});
  // Shares one Parquet writer (an in-memory DuckDB) among the writers of a sink's many tables.
  void share_parquet(std::shared_ptr<ParquetFileWriter> parquet) { parquet_ = std::move(parquet); }
  const IcebergCommitReport& last_commit() const { return report_; }

 private:
  struct Plan;
  // The table's current version (nullopt before its first commit) and the ledger of its snapshots.
  struct Current {
    std::optional<TableVersion> base;
    SummaryLedger held;
  };
  Result<Current> load_current();
  Result<std::vector<BatchLanded>> land_group(std::span<const BatchToLand> group);
  Result<Prepared> prepare_files(std::span<const BatchToLand> group);
  Result<Committed> commit_files(const PreparedLanding& landing);
  // After a commit (or a failed one): removes the files no version will name, and once a writer's life, after the
  // first that succeeded, sweeps the data files of killed landings.
  void after_commit(bool succeeded);
  // Removes `files` (best effort: one that stays is logged) and empties the list.
  void discard(std::vector<std::string>& files);
  void sweep();
  // `held`: the base's ledger, as land() read it to find the new batches; the plan adds them to it.
  Result<Plan> plan(const std::optional<TableVersion>& base, SummaryLedger held, std::span<const BatchToLand> batches);
  // The plan that commits `batches` (of `landing`) on `base`: nullopt when the files cannot be (the table's columns
  // or layout changed since they were written).
  Result<std::optional<Plan>> plan_commit(const std::optional<TableVersion>& base, SummaryLedger held,
                                          const PreparedLanding& landing,
                                          const std::vector<const PreparedBatch*>& batches);
  // One list of data files per batch.
  Result<std::vector<std::vector<DataFile>>> write_data_files(const Plan& plan, std::span<const BatchToLand> batches);
  // `batch_ids`: the summary's list of the snapshot's batches ("a,b").
  Result<nlohmann::json> next_metadata(const std::optional<TableVersion>& base, const Plan& plan,
                                       const std::string& batch_ids, const std::vector<DataFile>& files);
  Result<std::vector<ManifestFile>> carried_manifests(const nlohmann::json& base, const Plan& plan, int64_t snapshot_id,
                                                      int64_t sequence_number);
  Result<std::string> relative(const std::string& location) const;

  IcebergWriterOptions options_;
  std::unique_ptr<TableStore> store_;
  std::unique_ptr<IcebergCatalog> catalog_;
  std::shared_ptr<ParquetFileWriter> parquet_;
  IcebergCommitReport report_;
  // The files of the landing under way that no version names yet (data, and manifests and manifest lists), those
  // it wrote that none ever will (a lost race's manifests, data files written again), and whether the commit was
  // asked for (after which a failure may still have made it).
  std::vector<std::string> data_written_, metadata_written_, abandoned_;
  bool committing_ = false;
  bool swept_ = false;  // once a writer's life: the first landing that commits
};

}  // namespace skippr
