// AthenaIceberg: an Apache Iceberg v2 table on S3 in the AWS Glue catalog (table_type=ICEBERG), which Athena reads
// and writes. Landed exactly once as SkipprLake is (formats/iceberg/table_writer.h); the commit moves the Glue
// table's metadata_location, conditional on its VersionId.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec athena_iceberg_sink_spec();
}
