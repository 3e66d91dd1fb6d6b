// Where a CDC read resumes: the snapshot phase (the slot's consistent point and the last key read) or the stream
// phase (the commit LSN of a transaction and how many of its events are committed to the WAL). The position is the
// truth on restart: the source itself skips every event it covers, so whatever the server resends is harmless.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

// One table's part of a many-table position. A table snapshotted after the stream began (added to `tables` later, or
// re-synced) has `since`: the consistent point of its own snapshot, before which the stream's changes of it are
// already in the snapshot and are skipped.
struct CdcTableProgress {
  bool done = true;                // its snapshot is read (or it has none: cdc_only)
  std::vector<std::string> after;  // while not done: the key values of the last row read, as text
  uint64_t since = 0;
  uint64_t resync = 0;  // the newest re-sync request this table's snapshot answers (see CdcSource)
};

struct CdcPosition {
  std::string slot;
  bool snapshot = false;
  uint64_t consistent_lsn = 0;     // snapshot phase: where the stream starts once the table is read
  std::vector<std::string> after;  // snapshot phase: the key values of the last row read, as text (empty: none yet)
  uint64_t lsn = 0;                // stream phase: the commit LSN of the last transaction events came from
  uint64_t index = 0;              // ... how many of its events are delivered
  bool tx_done = false;            // ... all of them (then end_lsn is the end of its commit record)
  uint64_t end_lsn = 0;
  // A source of several tables (its streams): each table's progress by stream name. A one-table source keeps the
  // format it always had (`after` above for its snapshot).
  bool per_table = false;
  std::map<std::string, CdcTableProgress> tables;

  static CdcPosition stream_from(std::string slot, uint64_t lsn) {
    CdcPosition p;
    p.slot = std::move(slot);
    p.lsn = lsn;
    return p;
  }
  // The stream phase from `from` on; a many-table position keeps its tables.
  CdcPosition streaming_from(uint64_t from) const {
    CdcPosition p;
    p.slot = slot;
    p.lsn = from;
    p.per_table = per_table;
    p.tables = tables;
    return p;
  }
  // True when event `event_index` (0-based) of the transaction committed at `commit_lsn` is already delivered.
  bool covers(uint64_t commit_lsn, uint64_t event_index) const {
    if (snapshot) return false;
    return commit_lsn < lsn || (commit_lsn == lsn && (tx_done || event_index < index));
  }
  // The highest LSN the slot may confirm once this position is committed: every transaction committed before it is
  // delivered in full. 0 in the snapshot phase (nothing streamed yet).
  uint64_t confirmable_lsn() const { return snapshot ? 0 : tx_done ? end_lsn : lsn; }

  Position to_position() const;
  // kCorruption for a token this source did not write.
  static Result<CdcPosition> parse(const Position& position);
};

// The order token of a change: change_order_token (core/change_fields.h) of its commit LSN and its event index + 1.

}  // namespace skippr
