// Azure Synapse (dedicated SQL pool): exactly once. Each batch is staged to Azure Blob Storage as gzipped CSV, named
// from its BatchId, then one transaction (T-SQL over ODBC, FreeTDS's TDS driver by default) runs, for every batch of
// the group that the ledger does not hold yet, `COPY INTO target FROM 'https://<account>/<container>/...' WITH
// (FILE_TYPE = 'CSV', CREDENTIAL = ..., COMPRESSION = 'GZIP')` and the `_skippr_batches` row, with XACT_ABORT ON so
// any error rolls the whole transaction back. A commit whose answer is lost is an unknown outcome; the retry asks the
// ledger. Staged blobs are deleted once their transaction committed; what a crash leaves is swept when the sink next
// opens (every blob under the pipeline's staging prefix is landed or staged again by the landing that needs it).
//
// Synapse enforces no primary key, so the ledger is checked inside the transaction, under the pipeline's lease.
// Landing: append only in this build (merge_by_key and the replace landings are exit 2 at load).
#pragma once

#include "core/connector.h"

namespace skippr {

ConnectorSpec synapse_sink_spec();

}  // namespace skippr
