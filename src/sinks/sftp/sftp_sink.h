// SFTP: one file per batch (per partition with partition_by) in a remote folder, named from the BatchId, written to
// <name>.tmp, fsync'd and renamed. SFTP v3 refuses a rename onto an existing name, so a replayed batch whose file
// landed is not rewritten, and a retry after a kill overwrites only its own temp: overwrite on retry, never a
// duplicate.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec sftp_sink_spec();
}
