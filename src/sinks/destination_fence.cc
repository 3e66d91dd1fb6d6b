#include "sinks/destination_fence.h"

#include <fmt/format.h>

namespace skippr {
namespace {
std::string quoted_name(const LedgerDialect& d, std::string_view text) {
  return d.quote_identifier ? d.quote_identifier(text) : fmt::format("\"{}\"", text);
}
}  // namespace

std::string FenceSql::create() const {
  return fmt::format(
      "CREATE TABLE IF NOT EXISTS {}{} (target_table {} NOT NULL, pipeline {} NOT NULL, lineage {} NOT NULL, "
      "landings {}, takeovers {})",
      d.schema_prefix, quoted_name(d, kFenceTable), d.text_type, d.text_type, d.text_type, d.uint_type, d.uint_type);
}

namespace {
std::string mine(const FenceSql& f) {
  return fmt::format("target_table = {} AND pipeline = {}", f.d.quote_literal(f.target), f.d.quote_literal(f.pipeline));
}
std::string table(const FenceSql& f) { return f.d.schema_prefix + quoted_name(f.d, kFenceTable); }
}  // namespace

std::string FenceSql::hold(std::string_view lineage) const {
  return fmt::format("UPDATE {} SET landings = landings + 1 WHERE {} AND lineage = {}", table(*this), mine(*this),
                     d.quote_literal(lineage));
}

std::string FenceSql::held(std::string_view lineage) const {
  return fmt::format("EXISTS (SELECT 1 FROM {} WHERE {} AND lineage = {})", table(*this), mine(*this),
                     d.quote_literal(lineage));
}

std::string FenceSql::take(std::string_view lineage) const {
  return fmt::format("UPDATE {} SET lineage = {}, takeovers = takeovers + 1 WHERE {}", table(*this),
                     d.quote_literal(lineage), mine(*this));
}

std::string FenceSql::claim(std::string_view lineage) const {
  // FROM a one-row derived table: GoogleSQL takes no WHERE without a FROM.
  return fmt::format(
      "INSERT INTO {0} (target_table, pipeline, lineage, landings, takeovers) SELECT {1}, {2}, {3}, 0, 0 FROM (SELECT "
      "1 AS one) AS one_row WHERE NOT EXISTS (SELECT 1 FROM {0} WHERE {4})",
      table(*this), d.quote_literal(target), d.quote_literal(pipeline), d.quote_literal(lineage), mine(*this));
}

std::string FenceSql::owner() const {
  return fmt::format("SELECT lineage FROM {} WHERE {}", table(*this), mine(*this));
}

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

Status DestinationFence::hold(const BatchId& id, const LedgerDialect& ledger) {
  if (id.lineage.empty() || id.lineage == held_) return ok();
  SKIPPR_TRY(client_.write(sql_.claim(id.lineage)));
  auto owner = client_.read(sql_.owner());
  if (!owner) return std::unexpected(owner.error());
  if (holder_of(*owner) == id.lineage) {
    held_ = id.lineage;
    return ok();
  }
  // A RESET gives the pipeline a new lineage without a takeover, its epoch above every batch landed. A copy that was
  // taken over has no such epoch: the run that took over resumed above every epoch in the ledger, and lands above it.
  auto tip = client_.read(ledger_tip_sql(ledger, sql_.target, sql_.pipeline));
  if (!tip) return std::unexpected(tip.error());
  const std::optional<LedgerTip> landed = ledger_tip_of(*tip);
  if (landed && id.epoch <= landed->max_epoch) return fenced_out(id.lineage);
  return take(id.lineage);
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
