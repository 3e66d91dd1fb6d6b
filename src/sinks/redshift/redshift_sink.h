// Redshift: exactly once. Each batch is staged to S3 as gzipped CSV, named from its BatchId, then one transaction
// (over libpq: Redshift speaks the PostgreSQL protocol) runs, for every batch of the group that the ledger does not
// hold yet, `COPY target FROM 's3://...' IAM_ROLE ... FORMAT AS CSV GZIP` and the `_skippr_batches` row. A commit
// whose answer is lost is an unknown outcome; the retry asks the ledger. Staged objects are deleted once their
// transaction committed; what a crash leaves behind is swept when the sink next opens (every object under the
// pipeline's staging prefix is either landed or staged again by the landing that needs it).
//
// merge_by_key stages the batch with its row numbers, copies it into a temp table inside the same transaction, and
// merges it with UPDATE ... FROM, DELETE ... USING and INSERT ... SELECT (sinks/redshift/redshift_merge.h).
// replace_partition and replace_table are not built for Redshift yet: exit 2 at load.
//
// libpq rather than the Redshift Data API: the PRODUCT contract names dsn / host / port / user / password /
// database, one connection keeps the transaction open across the group's statements (the Data API needs a batch of
// statements sent whole, and a separate status poll), and the Postgres sink's libpq layer is reused.
#pragma once

#include "core/connector.h"

namespace skippr {

ConnectorSpec redshift_sink_spec();

}  // namespace skippr
