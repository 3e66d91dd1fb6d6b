// The Postgres CDC source (modes snapshot_then_cdc and cdc_only): a logical replication slot with pgoutput and a
// publication for the table. snapshot_then_cdc first reads the table in key order inside the slot's exported
// snapshot, then streams every change committed after it; cdc_only streams only. Each row carries _skippr_op
// (insert | update | delete) and _skippr_order ((commit LSN << 32) + event index + 1), which merge_by_key sinks
// compare per key. The slot's confirmed flush moves only on acknowledge (after the WAL commit).
#pragma once

#include <memory>
#include <string>

#include "core/connector.h"

namespace skippr {

enum class CdcMode { kSnapshotThenCdc, kCdcOnly };

// "skippr_<pipeline>", lowercased, every character outside [a-z0-9_] as '_' (a valid slot and publication name).
std::string cdc_default_name(std::string_view pipeline);

Result<std::unique_ptr<Source>> make_cdc_source(const ConnectorContext& ctx, const std::string& schema,
                                                const std::string& table, CdcMode mode);

}  // namespace skippr
