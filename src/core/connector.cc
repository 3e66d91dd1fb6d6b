#include "core/connector.h"

#include <fmt/format.h>

namespace skippr {

std::string group_ids(std::span<const BatchToLand> group) {
  if (group.empty()) return "no batch";
  // The parts of one batch (one per stream) share its id: count batches, not parts.
  size_t batches = 1;
  for (size_t i = 1; i < group.size(); ++i) batches += group[i].id == group[i - 1].id ? 0 : 1;
  if (batches == 1) return group.front().id.str();
  return fmt::format("{} .. {} ({} batches)", group.front().id.str(), group.back().id.str(), batches);
}

Result<std::vector<BatchLanded>> Sink::write_group(std::span<const BatchToLand> group) {
  std::vector<BatchLanded> landed;
  for (const auto& item : group) {
    auto outcome = write(item.batch, item.id, item.position_after);
    if (!outcome) return std::unexpected(outcome.error());
    const bool applied = *outcome == WriteOutcome::kApplied;
    landed.push_back({*outcome, applied ? rows_rejected_by_last_write() : 0});
  }
  return landed;
}

const char* to_string(Guarantee g) {
  switch (g) {
    case Guarantee::kExactlyOnce:
      return "exactly once";
    case Guarantee::kOverwriteOnRetry:
      return "overwrite on retry";
    case Guarantee::kAtLeastOnce:
      return "at least once";
    case Guarantee::kNone:
      return "none";
  }
  return "none";
}

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::kString:
      return "string";
    case ParamType::kInt:
      return "integer";
    case ParamType::kDouble:
      return "number";
    case ParamType::kBool:
      return "boolean";
    case ParamType::kPath:
      return "path";
    case ParamType::kStringList:
      return "list of strings";
    case ParamType::kStringMap:
      return "map of strings";
  }
  return "string";
}

const char* to_string(Landing l) {
  switch (l) {
    case Landing::kAppend:
      return "append";
    case Landing::kMergeByKey:
      return "merge_by_key";
    case Landing::kReplacePartition:
      return "replace_partition";
    case Landing::kReplaceTable:
      return "replace_table";
  }
  return "append";
}

const ConnectorSpec* find_connector(std::string_view type_name, bool is_source) {
  for (const auto& spec : connector_registry()) {
    if (spec.is_source == is_source && spec.type_name == type_name) return &spec;
  }
  return nullptr;
}

}  // namespace skippr
