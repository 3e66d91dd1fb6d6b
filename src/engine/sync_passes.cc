#include "engine/sync_passes.h"

#include "state/pipeline_state.h"

namespace skippr {

SyncPasses::SyncPasses(bool full_refresh, const Position& last_committed) : full_refresh_(full_refresh) {
  const auto marked = unwrap_position(last_committed);
  if (marked && !marked->mark.ends_sync) {
    // Killed mid-sync: the same sync goes on from where its last batch left the source.
    open_ = true;
    committed_in_sync_ = true;
    resumed_ = true;
    sync_id_ = marked->mark.sync_id;
    source_start_ = marked->source;
    return;
  }
  if (!full_refresh_) source_start_ = marked ? marked->source : last_committed;
}

bool SyncPasses::begin_poll() {
  const bool first = first_poll_;
  first_poll_ = false;
  if (open_) return false;
  open_ = true;
  committed_in_sync_ = false;
  resumed_ = false;
  rows_in_sync_ = 0;
  sync_id_ = new_lineage();  // 128 random bits: no two syncs of any pipeline share an id
  return full_refresh_ && !first;
}

Position SyncPasses::commit_position(const Position& source, bool ends, size_t rows) {
  committed_in_sync_ = true;
  rows_in_sync_ += rows;
  if (ends) open_ = false;
  return wrap_position(SyncMark{sync_id_, ends}, source);
}

bool SyncPasses::needs_end_batch() const { return open_ && (full_refresh_ || committed_in_sync_); }

Position source_position(const Position& committed) {
  auto marked = unwrap_position(committed);
  return marked ? marked->source : committed;
}

}  // namespace skippr
