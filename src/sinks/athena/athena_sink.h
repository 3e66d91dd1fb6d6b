// Athena (Hive tables): one Parquet object per batch and partition folder on S3, named from the BatchId and put
// with If-None-Match (overwrite on retry, as the S3 sink), and the AWS Glue table Athena queries: created from the
// first batch, extended with each new field, and every partition folder registered (BatchCreatePartition; one that
// exists is what a replay meets). Partition keys are strings, as the folder names are.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec athena_sink_spec();
}
