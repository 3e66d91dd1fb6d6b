// GCS: one object per batch (per partition with partition_by), named from the BatchId, written with
// ifGenerationMatch=0. A replayed batch whose object landed gets 412 and is not rewritten; a retry after an unknown
// outcome uses the same name, so the object is there once, whole: overwrite on retry, never a duplicate.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec gcs_sink_spec();
}
