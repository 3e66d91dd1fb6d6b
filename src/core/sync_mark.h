// Which sync a committed batch belongs to, for the landings that replace what a sync read (replace_partition,
// replace_table). A sync is one pass over the source: its polls from the first until the one that finds it drained.
// The engine wraps the source's position of such a pipeline in an envelope naming the sync and whether the batch
// ends it; the envelope is committed with the batch (WAL and destination ledger alike), so a run killed mid-sync
// resumes the same sync, even from a new DATA_DIR that resumes from the destination's ledger. Sinks read the mark
// from BatchToLand::position_after; sources only ever see their own position inside.
#pragma once

#include <optional>
#include <string>

#include "core/batch.h"

namespace skippr {

struct SyncMark {
  std::string sync_id;     // 32 hex digits, random, made when the sync starts
  bool ends_sync = false;  // the last batch of its sync: replace_table swaps the refreshed table in with it
  bool operator==(const SyncMark&) const = default;
};

struct MarkedPosition {
  SyncMark mark;
  Position source;  // the source's own position
};

Position wrap_position(const SyncMark& mark, const Position& source);
// nullopt when `position` is not an envelope (a pipeline whose landing was changed to a replace landing while
// batches committed before waited, or an empty position).
std::optional<MarkedPosition> unwrap_position(const Position& position);

// The mark a sink lands `position_after` under. A batch committed without one (see above) is a sync of its own,
// named after its BatchId, that it ends.
SyncMark sync_mark_of(const Position& position_after, const BatchId& id);

}  // namespace skippr
