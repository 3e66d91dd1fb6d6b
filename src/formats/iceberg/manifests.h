// Iceberg manifests and manifest lists (spec: "Manifests", "Manifest Lists"), as Avro files with the spec's field
// ids, written and read through formats/avro_file. A manifest lists data files with their partition values and
// row counts; a manifest list (one per snapshot) lists the manifests of the snapshot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "formats/iceberg/iceberg_schema.h"
#include "formats/iceberg/partition_spec.h"

namespace skippr {

struct DataFile {
  std::string path;  // the file's full location
  int64_t record_count = 0;
  int64_t file_size_in_bytes = 0;
  std::vector<PartitionValue> partition;  // one per spec field
  std::string format = "PARQUET";         // as the manifest names it (another writer's may be ORC or AVRO)
};

enum class EntryStatus : int { kExisting = 0, kAdded = 1, kDeleted = 2 };

struct ManifestEntry {
  EntryStatus status = EntryStatus::kAdded;
  // Null for an entry added by the snapshot that commits the manifest: inherited from it (the spec's "sequence
  // number inheritance"). An existing entry carried into a new manifest keeps them explicit.
  std::optional<int64_t> snapshot_id;
  std::optional<int64_t> sequence_number;
  std::optional<int64_t> file_sequence_number;
  DataFile file;
};

struct ManifestFile {
  std::string path;
  int64_t length = 0;
  int partition_spec_id = 0;
  int content = 0;  // 0: data files (this writer writes no delete files)
  int64_t sequence_number = 0;
  int64_t min_sequence_number = 0;
  int64_t added_snapshot_id = 0;
  int32_t added_files_count = 0;
  int32_t existing_files_count = 0;
  int32_t deleted_files_count = 0;
  int64_t added_rows_count = 0;
  int64_t existing_rows_count = 0;
  int64_t deleted_rows_count = 0;
};

Result<std::string> write_manifest(const std::vector<ManifestEntry>& entries, const IcebergSchema& schema,
                                   const PartitionSpec& spec);
Result<std::vector<ManifestEntry>> read_manifest(std::string_view bytes);

Result<std::string> write_manifest_list(const std::vector<ManifestFile>& manifests, int64_t snapshot_id,
                                        std::optional<int64_t> parent_snapshot_id, int64_t sequence_number);
Result<std::vector<ManifestFile>> read_manifest_list(std::string_view bytes);

}  // namespace skippr
