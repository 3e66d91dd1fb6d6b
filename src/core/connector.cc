#include "core/connector.h"

namespace skippr {

const char* to_string(Guarantee g) {
  switch (g) {
    case Guarantee::kExactlyOnce: return "exactly once";
    case Guarantee::kOverwriteOnRetry: return "overwrite on retry";
    case Guarantee::kAtLeastOnce: return "at least once";
    case Guarantee::kNone: return "none";
  }
  return "none";
}

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::kString: return "string";
    case ParamType::kInt: return "integer";
    case ParamType::kDouble: return "number";
    case ParamType::kBool: return "boolean";
    case ParamType::kPath: return "path";
    case ParamType::kStringList: return "list of strings";
    case ParamType::kStringMap: return "map of strings";
  }
  return "string";
}

const char* to_string(Landing l) {
  switch (l) {
    case Landing::kAppend: return "append";
    case Landing::kMergeByKey: return "merge_by_key";
    case Landing::kReplacePartition: return "replace_partition";
    case Landing::kReplaceTable: return "replace_table";
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
