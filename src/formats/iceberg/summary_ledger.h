// The exactly-once ledger of an Iceberg table, kept in the table itself: every snapshot this writer commits carries,
// in its summary, the BatchIds it applied ("skippr.batch-ids") and, under "skippr.ledger", per pipeline and per
// lineage the newest batch applied (a high-water mark: a lineage's batches land in order, so a batch at or below it
// is in the table) with the source position after it. "Already applied?" then reads one snapshot, not the history,
// and a sync with a new DATA_DIR resumes from the tip (Sink::ledger_tip). The same scheme as Flink's and Kafka
// Connect's Iceberg committers, which keep their checkpoint id in the snapshot summary.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "core/batch.h"
#include "core/connector.h"
#include "core/result.h"

namespace skippr {

inline constexpr std::string_view kSummaryBatchIds = "skippr.batch-ids";
inline constexpr std::string_view kSummaryLedger = "skippr.ledger";

class SummaryLedger {
 public:
  // The ledger of a snapshot summary's "skippr.ledger" text ("" = empty). kBadInput when it cannot be read.
  static Result<SummaryLedger> parse(std::string_view text);
  // The newest snapshot of `metadata` (following parent ids from the current one) whose summary has a ledger:
  // snapshots committed by other writers carry none and are skipped.
  static Result<SummaryLedger> of_table(const nlohmann::json& metadata);

  bool has(const BatchId& id) const;
  void add(const BatchId& id, const Position& position_after);
  std::optional<LedgerTip> tip(std::string_view pipeline) const;
  std::string dump() const { return json_.dump(); }

 private:
  nlohmann::json json_ = nlohmann::json::object();
};

}  // namespace skippr
