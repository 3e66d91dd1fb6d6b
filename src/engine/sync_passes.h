// The syncs of a pipeline whose landing replaces what a sync read (replace_partition, replace_table; see
// core/sync_mark.h): which sync is open, where the source starts, and the envelope each committed position gets.
// Used by the read stage alone.
#pragma once

#include <string>

#include "core/sync_mark.h"

namespace skippr {

class SyncPasses {
 public:
  // `full_refresh` (replace_table): every sync reads the source from its start. `last_committed`: the position after
  // the pipeline's last committed batch (the WAL's, or the ledger tip a new DATA_DIR resumes from); a sync it did not
  // end goes on.
  SyncPasses(bool full_refresh, const Position& last_committed);

  // Where the source is sought to before its first poll.
  const Position& source_start() const { return source_start_; }
  // Before each poll: opens a sync when none is open. True when the source must first be sought back to its start
  // (a full refresh after the first).
  bool begin_poll();
  // The position a batch of `rows` rows cut now is committed with; `ends`: the poll that made it found the source
  // drained.
  Position commit_position(const Position& source, bool ends, size_t rows);
  // A full refresh whose sync, ended now with `pending_rows` more, would have read no row at all: it would empty
  // the table. A sync this process resumed (killed mid-sync) read rows before, as far as it can tell: false.
  bool ends_empty_refresh(size_t pending_rows) const {
    return full_refresh_ && open_ && !resumed_ && rows_in_sync_ + pending_rows == 0;
  }
  // A drained poll that left nothing to cut still commits a row-less batch that ends the sync: always for a full
  // refresh (the source may hold nothing now, and the table must say so), else when the sync committed a batch.
  bool needs_end_batch() const;
  // The source is drained: the open sync (if commit_position did not end it) ends without a batch of its own.
  void drained() { open_ = false; }

 private:
  bool full_refresh_;
  Position source_start_;
  bool open_ = false;
  bool first_poll_ = true;
  bool committed_in_sync_ = false;
  bool resumed_ = false;     // the open sync was begun by an earlier run
  size_t rows_in_sync_ = 0;  // committed by this run in the open sync
  std::string sync_id_;
};

// The source's own position inside a committed one (itself when it has no envelope).
Position source_position(const Position& committed);

}  // namespace skippr
