// A sink that lands each batch on its own (no coalesced group: its destination has no transaction that spans
// several requests), told whether an earlier attempt may have landed it, so it asks its destination only then.
// ClickHouse, Snowflake, BigQuery and Databricks share this; each implements land() (Snowflake also lands groups of
// appends in one request, and falls back to this for the rest).
#pragma once

#include <span>
#include <vector>

#include "core/connector.h"

namespace skippr {

class PerBatchSink : public Sink {
 public:
  using Sink::write;
  // A direct write() knows nothing of earlier attempts: it is treated as one that may have landed.
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) final {
    return land({batch, id, position_after, /*maybe_landed=*/true});
  }
  Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group) override {
    std::vector<BatchLanded> landed;
    for (const auto& item : group) {
      auto outcome = land(item);
      if (!outcome) return std::unexpected(outcome.error());
      landed.push_back({*outcome, *outcome == WriteOutcome::kApplied ? last_rejected_ : 0});
    }
    return landed;
  }
  uint64_t rows_rejected_by_last_write() const final { return last_rejected_; }

 protected:
  // Lands one batch; sets last_rejected_ to the rows it sent to the rejects table.
  virtual Result<WriteOutcome> land(const BatchToLand& item) = 0;
  uint64_t last_rejected_ = 0;
};

}  // namespace skippr
