// Snowflake through its SQL API v2 (clients/snowflake). Exactly once: each batch is one request, a transaction that
// inserts the rows and the batch's `_skippr_batches` ledger row together, both conditional on the ledger not holding
// the batch yet, so running the request twice adds nothing. The request's requestId is derived from the target and
// the BatchId, the same in every attempt and every process; a resend after an unknown outcome sets retry=true, so
// Snowflake answers with the first execution instead of running a second copy beside one still in flight.
// The multi-statement API takes no bind variables: rows travel as literals in INSERT ... SELECT ... FROM VALUES,
// in statements of at most ~1 MB.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec snowflake_sink_spec();
}
