// A batch's partition_by fields as the table's partition spec needs them, whichever batch they come in, so whether
// a pipeline lands never depends on where its batches were cut:
//  - a field the batch lacks is added, all null: its rows are in the NULL partition, as they would be beside rows
//    that have it. Typed as the table has it, else a timestamp under a time transform, a string under identity.
//  - a string field under year/month/day/hour (JSON has no timestamp type) is parsed as ISO-8601 into a timestamp
//    (a date when the table has a date). A value that is not one lands null, in the NULL partition, and its text in
//    `<field>__skippr_unparsed` (a string column added then), so nothing is lost and nothing stops the pipeline.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "formats/iceberg/iceberg_schema.h"
#include "formats/iceberg/partition_spec.h"

namespace skippr {

inline constexpr std::string_view kUnparsedSuffix = "__skippr_unparsed";

// nullopt when `batch` is already as `partition_by` needs it (no copy). `table`: the table's current schema, if it
// exists.
std::optional<Batch> fit_partition_fields(const Batch& batch, const std::vector<PartitionRequest>& partition_by,
                                          const std::optional<IcebergSchema>& table);

}  // namespace skippr
