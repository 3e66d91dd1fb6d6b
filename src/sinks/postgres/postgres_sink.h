// Postgres: exactly once. Rows go in by binary COPY into a temporary staging table; one transaction moves them into
// the target (append, or merge_by_key with an order token per row and tombstones for deletes) and records the BatchId
// in the ledger table _skippr_batches (sinks/kit/batch_ledger.h). A retry that finds its BatchId there does nothing.
#pragma once

#include <string_view>

#include "core/change_fields.h"  // kOpField, kOrderField, kOrderColumn, kTombstoneSuffix
#include "core/connector.h"

namespace skippr {

ConnectorSpec postgres_sink_spec();

}  // namespace skippr
