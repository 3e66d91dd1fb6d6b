// Iceberg partition specs (spec: "Partitioning"): `partition_by` entries such as "station" (identity),
// "day(event_time)", "month(ts)", "year(ts)", "hour(ts)", each row's partition values, the data file folder they
// name ("station=Central/event_time_day=2024-05-01/", the spec's human-readable form, escaped) and the Avro type of
// the partition struct in manifests.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "formats/iceberg/iceberg_schema.h"

namespace skippr {

enum class Transform { kIdentity, kYear, kMonth, kDay, kHour };

struct PartitionField {
  std::string source_name;  // the schema field it is computed from
  int source_id = 0;
  int field_id = 0;  // 1000 and up
  std::string name;  // "station", "event_time_day"
  Transform transform = Transform::kIdentity;
};

struct PartitionSpec {
  int spec_id = 0;
  std::vector<PartitionField> fields;

  nlohmann::json to_json() const;      // {"spec-id":..,"fields":[..]}
  nlohmann::json fields_json() const;  // the fields alone, as manifests carry them
  // kBadInput for a transform this writer does not know (bucket, truncate, ...).
  static Result<PartitionSpec> from_json(const nlohmann::json& j, const IcebergSchema& schema);
  // Same transforms of the same source fields (ids aside).
  bool same_layout(const PartitionSpec& other) const;
};

// kConfig naming `where` for an entry that is not a field name or transform(field).
struct PartitionRequest {
  std::string source_name;
  Transform transform = Transform::kIdentity;
};
Result<std::vector<PartitionRequest>> parse_partition_by(const std::vector<std::string>& partition_by,
                                                         std::string_view where);
// The spec for `requests` over `schema` (field ids from 1000). kBadInput when a source field is missing from the
// schema; kConfig (fix partition_by) when a time transform is asked of a field that is not a date or timestamp, or a
// binary field names a partition.
Result<PartitionSpec> make_partition_spec(const std::vector<PartitionRequest>& requests, const IcebergSchema& schema,
                                          std::string_view where);

// One partition value: null, a long (identity of long/boolean/date/timestamp; every time transform's int), a double,
// or a string.
using PartitionValue = std::variant<std::monostate, int64_t, double, std::string>;

struct PartitionGroup {
  std::vector<PartitionValue> values;  // one per spec field
  std::vector<size_t> rows;            // the batch's rows with these values
};
// The rows of `batch` grouped by partition (one group of every row for an unpartitioned spec), in a stable order.
std::vector<PartitionGroup> partition_rows(const Batch& batch, const PartitionSpec& spec);
// "station=Central/event_time_day=2024-05-01/" ("" for an unpartitioned spec); a value too long for a folder name
// is shortened there, deterministically.
std::string partition_path(const PartitionSpec& spec, const IcebergSchema& schema,
                           const std::vector<PartitionValue>& values);
// The Avro schema of the partition struct (record "r102"), as manifest entries carry it.
std::string partition_avro_schema(const PartitionSpec& spec, const IcebergSchema& schema);
// The Iceberg result type of a partition field.
std::string partition_result_type(const PartitionField& field, const IcebergSchema& schema);

}  // namespace skippr
