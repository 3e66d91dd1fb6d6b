// SkipprLake: an Apache Iceberg v2 table in a local folder or under an S3 prefix, landed exactly once. Each group
// of committed batches is one snapshot whose summary carries their BatchIds (formats/iceberg/table_writer.h); the
// catalog is the table's own files: metadata/v<N>.metadata.json created only if absent (link(2) on a folder,
// If-None-Match: * on S3), then metadata/version-hint.text.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec skippr_lake_sink_spec();
}
