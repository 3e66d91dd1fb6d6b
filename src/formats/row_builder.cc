#include "formats/row_builder.h"

#include <fmt/format.h>

#include "core/lossless.h"
#include "formats/field_names.h"

namespace skippr {

void RowBuilder::begin_row() {
  staged_.clear();
  ++row_stamp_;
  hint_ = 0;
}

int RowBuilder::find_column(std::string_view name) {
  const size_t n = names_.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t c = (hint_ + k) % n;
    if (names_[c] == name) {
      hint_ = c + 1;
      return static_cast<int>(c);
    }
  }
  return -1;
}

namespace {

// `value` as a value of `column_type` when that loses nothing (the rule a sink's columns follow, core/lossless.h):
// an integer widens into a double field, an integral double, a whole decimal string or a boolean (0/1) fits an
// integer field, a numeric string a double field, and anything is JSON text in a JSON field. False leaves `value` as
// it was.
bool convert_losslessly(FieldValue& value, Type column_type) {
  const bool text = value.type == Type::kString;
  if (column_type == Type::kInt64) {
    const auto v = value.type == Type::kDouble ? integral_value(value.d)
                   : value.type == Type::kBool ? std::optional<int64_t>(value.i)
                   : text                      ? whole_number(value.s)
                                               : std::nullopt;
    if (!v) return false;
    value.type = Type::kInt64;
    value.i = *v;
    return true;
  }
  if (column_type == Type::kDouble) {
    const auto v = value.type == Type::kInt64 ? std::optional<double>(static_cast<double>(value.i))
                   : text                     ? decimal_number(value.s)
                                              : std::nullopt;
    if (!v) return false;
    value.type = Type::kDouble;
    value.d = *v;
    return true;
  }
  if (column_type == Type::kJson && value.as_json) {
    value.s = value.as_json(value.as_json_context);
    value.type = Type::kJson;
    return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> RowBuilder::set(std::string_view name, const FieldValue& value) {
  if (value.null) return std::nullopt;  // absent and null are the same to a column
  const int c = find_column(name);
  Type column_type = value.type;
  if (c >= 0) {
    column_type = batch_.columns[c].type;
  } else if (auto known = types_.find(name); known != types_.end()) {
    column_type = known->second;
  } else if (auto problem = new_field_problem(name)) {
    return problem;
  }
  FieldValue stored = value;
  if (column_type != value.type && !convert_losslessly(stored, column_type)) {
    return fmt::format("field '{}' is {} here but {} in earlier records; a type change is not applied silently", name,
                       to_string(value.type), to_string(column_type));
  }
  if (c >= 0) {
    if (set_in_row_[c] == row_stamp_) return fmt::format("field '{}' appears twice", name);
    set_in_row_[c] = row_stamp_;
  } else {
    for (const auto& s : staged_) {
      if (s.column < 0 && s.name == name) return fmt::format("field '{}' appears twice", name);
    }
  }
  staged_.push_back({c, name, stored});
  return std::nullopt;
}

void RowBuilder::end_row() {
  for (auto& s : staged_) {
    if (s.column >= 0) continue;
    types_.try_emplace(std::string(s.name), s.value.type);
    batch_.add_column({std::string(s.name), s.value.type});
    names_.emplace_back(s.name);
    set_in_row_.push_back(row_stamp_);
    s.column = static_cast<int>(names_.size() - 1);
  }
  for (const auto& s : staged_) {
    Column& col = batch_.columns[s.column];
    const FieldValue& v = s.value;
    switch (v.type) {
      case Type::kInt64:
      case Type::kTimestamp:
      case Type::kDate:
        col.append_int(v.i);
        break;
      case Type::kBool:
        col.append_bool(v.i != 0);
        break;
      case Type::kDouble:
        col.append_double(v.d);
        break;
      default:
        col.append_string(v.s);
        break;
    }
  }
  // Columns set in this row carry the current stamp; every other column gets a NULL.
  for (size_t c = 0; c < batch_.columns.size(); ++c) {
    if (set_in_row_[c] != row_stamp_) batch_.columns[c].append_null();
  }
  ++batch_.rows;
  staged_.clear();
}

// A field never seen before: a name no destination can take, or one that collides with another field ignoring case
// (in earlier records or in this one), rejects the record. Runs once per new name, not per value.
std::optional<std::string> RowBuilder::new_field_problem(std::string_view name) const {
  if (auto problem = unusable_field_name(name)) return problem;
  for (const auto& [known, type] : types_) {
    if (differ_only_in_case(name, known)) return case_collision_reason(name, known);
  }
  for (const auto& s : staged_) {
    if (s.column < 0 && differ_only_in_case(name, s.name)) return case_collision_reason(name, s.name);
  }
  return std::nullopt;
}

Batch RowBuilder::take() {
  Batch out = std::move(batch_);
  batch_ = Batch{};
  names_.clear();
  set_in_row_.clear();
  return out;
}

}  // namespace skippr
