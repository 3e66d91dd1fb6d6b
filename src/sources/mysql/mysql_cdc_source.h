// The MySQL / MariaDB CDC source (modes snapshot_then_cdc and cdc_only): reads the binlog as a replica does
// (COM_BINLOG_DUMP from a file and offset), keeps the row events of the tables it reads, and commits all changes of
// one source transaction in one WAL batch with the position after it. snapshot_then_cdc first reads every table in key
// order inside one consistent-snapshot transaction; MariaDB names the binlog position that snapshot corresponds to
// (binlog_snapshot_file / _position) without any lock, and the stream starts exactly there. A kill mid-snapshot resumes
// each table after the last key read (in a new snapshot; the stream from the first snapshot's position makes every
// row right again: changes are full row images applied by order token). Each row carries _skippr_op
// (insert | update | delete | truncate) and _skippr_order ((binlog file number << 32 | the transaction's offset) << 32
// + its change index + 1; snapshot rows use the snapshot's position and 0).
#pragma once

#include <memory>

#include "core/connector.h"
#include "core/table_selection.h"

namespace skippr {

enum class MyCdcMode { kSnapshotThenCdc, kCdcOnly };

Result<std::unique_ptr<Source>> make_mysql_cdc_source(const ConnectorContext& ctx, TableSelection selection,
                                                      MyCdcMode mode);

// The replica id a pipeline dumps the binlog as, unless `server_id` says: a hash of the pipeline's name in
// [1000000, 2^31), so two pipelines on one server do not take each other's place.
uint32_t mysql_default_server_id(std::string_view pipeline);

}  // namespace skippr
