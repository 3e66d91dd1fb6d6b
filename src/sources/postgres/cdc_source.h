// The Postgres CDC source (modes snapshot_then_cdc and cdc_only): one logical replication slot with pgoutput and one
// publication for every table it reads. snapshot_then_cdc first reads the tables in key order inside the slot's
// exported snapshot, then streams every change committed after it; cdc_only streams only. With several tables each
// is a stream, keyed by its own primary key, and a poll ends on a transaction boundary, so all changes of one source
// transaction are committed in one WAL batch. A table added to `tables` later is read from a snapshot of its own (a
// temporary slot's consistent point) while the others stream. Each row carries _skippr_op
// (insert | update | delete | truncate) and _skippr_order ((commit LSN << 32) + event index + 1), which merge_by_key
// sinks compare per key; a truncate (a streamed TRUNCATE, or the end of a snapshot into merge_by_key) removes every
// older row. The slot's confirmed flush moves only on acknowledge (after the WAL commit).
#pragma once

#include <memory>
#include <string>

#include "core/connector.h"
#include "sources/postgres/table_selection.h"

namespace skippr {

enum class CdcMode { kSnapshotThenCdc, kCdcOnly };

// The default slot and publication name: "skippr_<pipeline>_<hash>", the pipeline's name lowercased with every
// character outside [a-z0-9_] as '_' (cut to fit 63 bytes), then 8 hex digits of a hash of the exact name, so
// pipelines "tp-a" and "tp_a" get different slots.
std::string cdc_default_name(std::string_view pipeline);
// The default of older versions, "skippr_<pipeline>" alone: a position that names it keeps using it.
std::string cdc_legacy_default_name(std::string_view pipeline);

Result<std::unique_ptr<Source>> make_cdc_source(const ConnectorContext& ctx, TableSelection selection, CdcMode mode);

}  // namespace skippr
