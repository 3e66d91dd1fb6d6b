// Hive-style partition folders for the sinks that write one object per batch (S3, GCS, AzureBlob, SFTP): the rows
// of a batch grouped by the values of `partition_by`, each group under "col=value/...", escaped as Hive does.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/batch.h"

namespace skippr {

// Folder ("" without partition_by) -> the rows that go there; nullopt means every row of the batch.
using ObjectPartitions = std::map<std::string, std::optional<std::vector<size_t>>>;
ObjectPartitions hive_partitions(const Batch& batch, const std::vector<std::string>& partition_by);

}  // namespace skippr
