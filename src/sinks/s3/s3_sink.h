// S3: one object per batch (per partition with partition_by), named from the BatchId, written with a conditional
// PutObject (If-None-Match: *). A replayed batch whose object landed gets 412 and is not rewritten; a retry after an
// unknown outcome uses the same key, so the object is there once, whole: overwrite on retry, never a duplicate.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec s3_sink_spec();
}
