// Which record field names can become columns. Checked when a field is first seen, before the record is committed,
// so a name no destination can take sends its record to the dead letters (or fails its request) instead of
// stopping the pipeline at every landing attempt.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace skippr {

// Why `name` cannot be a column, or nullopt: an empty name, or the reserved prefix `_skippr_` (the ledger's and the
// merge's own columns) other than the change fields _skippr_op and _skippr_order.
std::optional<std::string> unusable_field_name(std::string_view name);

// True when `a` and `b` are spelled differently but equal ignoring ASCII case: DuckDB, Snowflake, BigQuery and
// others fold identifiers, so such fields would collide as columns.
bool differ_only_in_case(std::string_view a, std::string_view b);

// The sentence for a field that collides with `existing`.
std::string case_collision_reason(std::string_view name, std::string_view existing);

}  // namespace skippr
