#include "formats/field_names.h"

#include <fmt/format.h>

#include "core/change_fields.h"

namespace skippr {

namespace {
constexpr std::string_view kReservedPrefix = "_skippr_";
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace

std::optional<std::string> unusable_field_name(std::string_view name) {
  if (name.empty()) return std::string("a field has an empty name, which no destination can take as a column");
  if (name.size() >= kReservedPrefix.size()) {
    bool reserved = true;
    for (size_t i = 0; i < kReservedPrefix.size() && reserved; ++i) reserved = lower(name[i]) == kReservedPrefix[i];
    if (reserved && !is_change_field(name)) {
      return fmt::format(
          "field '{}' starts with the reserved prefix _skippr_ (only _skippr_op and _skippr_order "
          "may be set by a source); rename it",
          name);
    }
  }
  return std::nullopt;
}

bool differ_only_in_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a == b) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string case_collision_reason(std::string_view name, std::string_view existing) {
  return fmt::format(
      "field '{}' differs from field '{}' only in letter case; destinations that fold names (DuckDB and others) "
      "cannot keep both as columns. Rename one in the source",
      name, existing);
}

}  // namespace skippr
