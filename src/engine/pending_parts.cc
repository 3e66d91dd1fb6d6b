#include "engine/pending_parts.h"

namespace skippr {

bool PendingParts::fits(const Batch& records) const {
  const auto found = index_.find(records.stream);
  return found == index_.end() || static_cast<bool>(parts_[found->second].can_append(records));
}

bool PendingParts::add(Batch&& records) {
  if (records.rows == 0) return true;
  const size_t rows = records.rows;
  const size_t bytes = records.byte_size();
  const auto found = index_.find(records.stream);
  if (found == index_.end()) {
    index_.emplace(records.stream, parts_.size());
    parts_.push_back(std::move(records));
  } else {
    Batch& part = parts_[found->second];
    const size_t before = part.byte_size();
    if (!part.append(records)) return false;
    bytes_ -= before;
    rows_ += rows;
    bytes_ += part.byte_size();
    return true;
  }
  rows_ += rows;
  bytes_ += bytes;
  return true;
}

std::vector<Batch> PendingParts::take() {
  std::vector<Batch> parts = std::move(parts_);
  *this = PendingParts{};
  if (parts.empty()) parts.emplace_back();
  return parts;
}

}  // namespace skippr
