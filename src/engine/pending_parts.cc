#include "engine/pending_parts.h"

namespace skippr {

bool PendingParts::fits(const Batch& records) const {
  const auto found = index_.find(records.stream);
  return found == index_.end() || static_cast<bool>(parts_[found->second].can_append(records));
}

bool PendingParts::add(Batch&& records) {
  if (records.rows == 0) return true;
  const size_t rows = records.rows;
  auto [found, is_new] = index_.try_emplace(records.stream, parts_.size());
  if (is_new) parts_.emplace_back();
  Batch& part = parts_[found->second];
  const size_t before = part.byte_size();
  if (is_new) {
    part = std::move(records);  // moved, not copied: the common case of one stream per batch
  } else if (!part.append(records)) {
    return false;
  }
  rows_ += rows;
  bytes_ += part.byte_size() - before;
  return true;
}

std::vector<Batch> PendingParts::take() {
  std::vector<Batch> parts = std::move(parts_);
  *this = PendingParts{};
  if (parts.empty()) parts.emplace_back();
  return parts;
}

}  // namespace skippr
