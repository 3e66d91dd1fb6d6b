// ClickHouse: rows in RowBinary over the HTTP interface, one INSERT per batch, each row carrying its identity in
// `_skippr_batch_id` and `_skippr_row`. At least once: ClickHouse has no transaction to record a batch with its rows,
// so a retry may repeat one. Before a batch that may have landed (a replay, a retry) is sent again, the sink asks
// whether all its rows are there and skips it if so; a repeat can then only come from an insert still running when
// the process died. The default engine, ReplacingMergeTree ordered by the identity, folds such repeats (read with
// FINAL); ReplicatedMergeTree drops an identical retried block itself; where the server has it,
// insert_deduplication_token carries the BatchId.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec clickhouse_sink_spec();
}
