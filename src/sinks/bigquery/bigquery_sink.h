// BigQuery through its REST API (clients/bigquery). Exactly once: each batch is loaded (a load job of NDJSON, its
// id derived from the BatchId) into a staging table of its own, then one query job (id derived from the BatchId too)
// runs a transaction that inserts the staged rows and the batch's `_skippr_batches` row, both conditional on the
// ledger not holding the batch. A job sent again after a lost answer meets 409 Already Exists and is read instead
// (jobs.get); a job that ended in an error is known not to have applied, so the next attempt takes the next id.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec bigquery_sink_spec();
}
