// The batch the read stage builds between two commits: one part per stream, in the order each stream first came.
// All parts are committed as one WAL batch, so what one poll (or one source transaction) gave is never split.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/batch.h"

namespace skippr {

class PendingParts {
 public:
  // Adds `records` to the part of their stream. False, with nothing changed, when they do not fit it (a field of
  // another type, or one that differs only in letter case): the caller commits what it has first.
  bool add(Batch&& records);
  // Whether `records` would be refused by add().
  bool fits(const Batch& records) const;
  size_t rows() const { return rows_; }
  size_t byte_size() const { return bytes_; }
  size_t streams() const { return parts_.size(); }
  // The parts, leaving this empty. A batch without rows (dead letters or a position alone) is one empty part of the
  // unnamed stream, as it always was.
  std::vector<Batch> take();

 private:
  std::vector<Batch> parts_;
  std::unordered_map<std::string, size_t> index_;  // stream -> its part
  size_t rows_ = 0;
  size_t bytes_ = 0;
};

}  // namespace skippr
