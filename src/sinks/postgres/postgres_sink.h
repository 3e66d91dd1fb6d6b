// Postgres: exactly once. Rows go in by binary COPY into a temporary staging table; one transaction moves them into
// the target (append, or merge_by_key with an order token per row and tombstones for deletes) and records the BatchId
// in the ledger table _skippr_batches (sinks/batch_ledger.h). A retry that finds its BatchId there does nothing.
#pragma once

#include <string_view>

#include "core/connector.h"
#include "sinks/change_fields.h"  // kOpField, kOrderField, kOrderColumn, kTombstoneSuffix

namespace skippr {

ConnectorSpec postgres_sink_spec();

}  // namespace skippr
