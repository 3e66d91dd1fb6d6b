#include "formats/iceberg/summary_ledger.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace skippr {

Result<SummaryLedger> SummaryLedger::parse(std::string_view text) {
  SummaryLedger ledger;
  if (text.empty()) return ledger;
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_object()) {
    return fail(ErrorKind::kBadInput, fmt::format("the snapshot summary's {} is not a JSON object", kSummaryLedger));
  }
  ledger.json_ = std::move(parsed);
  return ledger;
}

Result<SummaryLedger> SummaryLedger::of_table(const nlohmann::json& metadata) {
  std::map<int64_t, const nlohmann::json*> by_id;
  if (!metadata.contains("snapshots")) return SummaryLedger{};
  for (const auto& s : metadata.at("snapshots")) {
    by_id[s.value("snapshot-id", int64_t{-1})] = &s;
  }
  std::optional<int64_t> id;
  if (metadata.contains("current-snapshot-id") && metadata["current-snapshot-id"].is_number()) {
    id = metadata["current-snapshot-id"].get<int64_t>();
  }
  std::set<int64_t> seen;
  while (id && *id >= 0 && seen.insert(*id).second) {
    auto it = by_id.find(*id);
    if (it == by_id.end()) break;  // expired: older snapshots are not there to ask
    const nlohmann::json& snapshot = *it->second;
    const auto summary = snapshot.value("summary", nlohmann::json::object());
    if (auto text = summary.find(std::string(kSummaryLedger)); text != summary.end() && text->is_string()) {
      return parse(text->get<std::string>());
    }
    id.reset();
    if (snapshot.contains("parent-snapshot-id") && snapshot["parent-snapshot-id"].is_number()) {
      id = snapshot["parent-snapshot-id"].get<int64_t>();
    }
  }
  // No snapshot in reach has one (expired by another tool, or never written by us): the table's properties.
  const auto properties = metadata.value("properties", nlohmann::json::object());
  if (auto text = properties.find(std::string(kSummaryLedger)); text != properties.end() && text->is_string()) {
    return parse(text->get<std::string>());
  }
  return SummaryLedger{};
}

bool SummaryLedger::has(const BatchId& id) const {
  auto pipeline = json_.find(id.pipeline);
  if (pipeline == json_.end()) return false;
  const auto lineages = pipeline->value("lineages", nlohmann::json::object());
  auto mark = lineages.find(id.lineage);
  if (mark == lineages.end() || !mark->is_array() || mark->size() != 2) return false;
  const auto epoch = (*mark)[0].get<uint64_t>();
  const auto seq = (*mark)[1].get<uint64_t>();
  return id.epoch < epoch || (id.epoch == epoch && id.seq <= seq);
}

void SummaryLedger::add(const BatchId& id, const Position& position_after) {
  nlohmann::json& pipeline = json_[id.pipeline];
  nlohmann::json& mark = pipeline["lineages"][id.lineage];
  mark = nlohmann::json::array({id.epoch, id.seq});
  pipeline["max-epoch"] = std::max(pipeline.value("max-epoch", uint64_t{0}), id.epoch);
  const auto tip = pipeline.value("tip", nlohmann::json::object());
  const auto tip_epoch = tip.value("epoch", uint64_t{0});
  const auto tip_seq = tip.value("seq", uint64_t{0});
  // Newest by (epoch, seq), as the SQL ledgers order their rows: a new lineage starts above the epochs held.
  if (tip.empty() || id.epoch > tip_epoch || (id.epoch == tip_epoch && id.seq >= tip_seq)) {
    pipeline["tip"] = {
        {"batch-id", id.str()}, {"epoch", id.epoch}, {"seq", id.seq}, {"position", position_after.token}};
  }
}

std::optional<LedgerTip> SummaryLedger::tip(std::string_view pipeline_name) const {
  auto pipeline = json_.find(std::string(pipeline_name));
  if (pipeline == json_.end() || !pipeline->contains("tip")) return std::nullopt;
  const auto& tip = (*pipeline)["tip"];
  return LedgerTip{tip.value("batch-id", std::string()), Position{tip.value("position", std::string())},
                   pipeline->value("max-epoch", uint64_t{0})};
}

}  // namespace skippr
