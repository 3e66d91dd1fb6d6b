// An Iceberg catalog in AWS Glue, as Athena reads it: a Glue table with table_type=ICEBERG whose metadata_location
// names the current metadata file (and previous_metadata_location the one before). A commit writes a new metadata
// file (a fresh name, created only if absent), then moves metadata_location with UpdateTable conditional on the
// VersionId the base was read with.
#pragma once

#include <memory>
#include <string>

#include "clients/aws/glue_client.h"
#include "formats/iceberg/catalog.h"

namespace skippr {

std::unique_ptr<IcebergCatalog> glue_catalog(TableStore& store, GlueClient glue, std::string database,
                                             std::string table);

// The Glue (Hive) type of a field of an Iceberg or batch type: bigint, string, timestamp, ...
std::string glue_type(std::string_view iceberg_type);

}  // namespace skippr
