// What a WAL whose batches live in an object store (WAL_STORAGE=s3) keeps beside them: the last committed seq and
// the resume position after it, the landed watermark, and which writer committed which seqs. The object store holds
// the batches; this record says which of them are committed. The state store keeps it (state/dynamodb_state_store.h),
// every change conditional on the writer's fencing token, so a process whose lease was taken over commits nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

// Seqs from `first_seq` up to the next range's were committed by the writer holding fencing token `token`.
struct WalWriterRange {
  uint64_t first_seq = 0;
  uint64_t token = 0;
  bool operator==(const WalWriterRange&) const = default;
};

struct WalCommitPoint {
  uint64_t committed_seq = 0;  // 0 = nothing committed in this epoch
  Position position;           // after committed_seq
  uint64_t landed_seq = 0;
  std::vector<WalWriterRange> writers;  // ascending first_seq, covering every seq above landed_seq
  uint64_t lease_token = 0;             // of whoever holds the pipeline now
  // The token of the writer that committed `seq`; 0 when no range covers it.
  uint64_t token_of(uint64_t seq) const {
    uint64_t token = 0;
    for (const WalWriterRange& range : writers) {
      if (range.first_seq <= seq) token = range.token;
    }
    return token;
  }
};

class WalCommitLog {
 public:
  virtual ~WalCommitLog() = default;
  // Strongly consistent: what the last successful commit() and mark_landed() wrote.
  virtual Result<WalCommitPoint> read() = 0;
  // Moves the committed seq from seq - 1 to `seq` with its position and the writer ranges, if `token` still holds the
  // lease. An unknown outcome is resolved inside (the record is read back); kFenced when another writer holds it.
  virtual Status commit(uint64_t seq, const Position& position_after, const std::vector<WalWriterRange>& writers,
                        uint64_t token) = 0;
  // Moves the landed watermark up to `seq`, if `token` still holds the lease (kFenced otherwise).
  virtual Status mark_landed(uint64_t seq, uint64_t token) = 0;
};

}  // namespace skippr
