// Databricks (clients/databricks): each batch travels as a JSON file in a Unity Catalog volume, named from its
// BatchId and uploaded without overwrite, and lands by COPY INTO, which loads a file into a table once however often
// it runs (merge_by_key: a MERGE on the order tokens, which changes nothing the second time). The Statement
// Execution API runs one statement at a time, with no transaction around several, so the rows and the
// `_skippr_batches` ledger row are two statements; what ties them is a landing file uploaded beside the batch
// before either runs: it holds the statements. A batch whose landing file is there is committed to the destination:
// whoever finds it (the WAL's retry, or a run with a lost DATA_DIR asking for the ledger's tip) runs the same
// statements again, each a no-op where it already ran, then removes the files.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec databricks_sink_spec();
}
