// AzureBlob: one block blob per batch (per partition with partition_by), named from the BatchId, created with
// If-None-Match: * (Put Blob, or Put Block + Put Block List for a large one, visible only once the list is
// committed). A replayed batch whose blob landed gets 409 BlobAlreadyExists and is not rewritten; a retry after an
// unknown outcome uses the same name, so the blob is there once, whole: overwrite on retry, never a duplicate.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec azure_blob_sink_spec();
}
