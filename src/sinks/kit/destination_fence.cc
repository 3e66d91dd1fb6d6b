#include "sinks/kit/destination_fence.h"

#include <fmt/format.h>

namespace skippr {
namespace {
std::string mine(const FenceSql& f) {
  return fmt::format("target_table = {} AND pipeline = {}", f.d.quote_literal(f.target), f.d.quote_literal(f.pipeline));
}
}  // namespace

std::string FenceSql::create() const {
  return fmt::format(
      "CREATE TABLE IF NOT EXISTS {} (target_table {} NOT NULL, pipeline {} NOT NULL, lineage {} NOT NULL, "
      "landings {}, takeovers {})",
      table, d.text_type, d.text_type, d.text_type, d.uint_type, d.uint_type);
}

std::string FenceSql::hold() const {
  return fmt::format("UPDATE {} SET landings = landings + 1 WHERE {}", table, mine(*this));
}

std::string FenceSql::held(std::string_view lineage) const {
  return fmt::format("EXISTS (SELECT 1 FROM {} WHERE {} AND lineage = {})", table, mine(*this),
                     d.quote_literal(lineage));
}

std::string FenceSql::take(std::string_view lineage) const {
  return fmt::format("UPDATE {} SET lineage = {}, takeovers = takeovers + 1 WHERE {}", table, d.quote_literal(lineage),
                     mine(*this));
}

std::string FenceSql::claim(std::string_view lineage) const {
  return fmt::format(
      "MERGE INTO {0} AS fence USING (SELECT {1} AS target_table, {2} AS pipeline) AS mine ON fence.target_table = "
      "mine.target_table AND fence.pipeline = mine.pipeline WHEN NOT MATCHED THEN INSERT (target_table, pipeline, "
      "lineage, landings, takeovers) VALUES (mine.target_table, mine.pipeline, {3}, 0, 0)",
      table, d.quote_literal(target), d.quote_literal(pipeline), d.quote_literal(lineage));
}

std::string FenceSql::owner() const { return fmt::format("SELECT lineage FROM {} WHERE {}", table, mine(*this)); }

Status DestinationFence::take(std::string_view lineage) {
  SKIPPR_TRY(client_.write(sql_.take(lineage)));
  SKIPPR_TRY(client_.write(sql_.claim(lineage)));
  held_ = lineage;
  return ok();
}

namespace {
std::string holder_of(const SqlRows& rows) {
  return rows.empty() || rows.front().empty() ? std::string() : rows.front().front().value_or("");
}
}  // namespace

Status DestinationFence::hold(const BatchId& id) {
  if (id.lineage.empty() || id.lineage == held_) return ok();
  SKIPPR_TRY(client_.write(sql_.claim(id.lineage)));
  auto owner = client_.read(sql_.owner());
  if (!owner) return std::unexpected(owner.error());
  if (holder_of(*owner) == id.lineage) {
    held_ = id.lineage;
    return ok();
  }
  // A RESET gives the pipeline a new lineage without a takeover, its epoch above every batch landed: it takes the
  // fence. A copy that was taken over has no such epoch: the run that took over resumed above every epoch in the
  // ledger, and lands above it. At the same epoch, the holder decides: one that landed nothing is a run that died
  // while taking the fence (its takeover committed after the next run's), and must not lock this lineage out.
  const bool streams = !sql_.target_like.empty();
  auto tip = client_.read(streams ? ledger_tip_any_table_sql(sql_.d, sql_.target_like, sql_.pipeline)
                                  : ledger_tip_sql(sql_.d, sql_.target, sql_.pipeline));
  if (!tip) return std::unexpected(tip.error());
  const std::optional<LedgerTip> landed = ledger_tip_of(*tip);
  if (landed && id.epoch < landed->max_epoch) return fenced_out(id.lineage);
  if (landed && id.epoch == landed->max_epoch) {
    auto holder_landed = client_.read(
        streams ? ledger_has_lineage_any_table_sql(sql_.d, sql_.target_like, sql_.pipeline, holder_of(*owner))
                : ledger_has_lineage_sql(sql_.d, sql_.target, sql_.pipeline, holder_of(*owner)));
    if (!holder_landed) return std::unexpected(holder_landed.error());
    if (!holder_landed->empty()) return fenced_out(id.lineage);
  }
  return take(id.lineage);
}

std::string DestinationFence::unlanded(const BatchId& id, std::string_view target) const {
  const std::string fresh = fmt::format("NOT EXISTS ({})", ledger_has_sql(sql_.d, target, id));
  return id.lineage.empty() ? fresh : fresh + " AND " + sql_.held(id.lineage);
}

Status DestinationFence::confirm_landed(const BatchId& id, std::string_view target) {
  auto landed = client_.read(ledger_has_sql(sql_.d, target, id));
  if (!landed) return std::unexpected(landed.error());
  return landed->empty() ? fenced_out(id.lineage) : ok();
}

Status DestinationFence::fenced_out(std::string_view lineage) {
  std::string holder = "unknown";
  if (auto owner = client_.read(sql_.owner()); owner && !holder_of(*owner).empty()) holder = holder_of(*owner);
  return fail(ErrorKind::kFenced,
              fmt::format("{}: pipeline '{}' was taken over here by a run that started without this one's DATA_DIR "
                          "(lineage {}); batches of this run's lineage {} can no longer land without landing rows "
                          "twice. Stop this copy of the pipeline: the other one resumed from what the table holds",
                          where_, sql_.pipeline, holder, lineage));
}

}  // namespace skippr
