// Builds a columnar Batch from rows whose fields arrive by name (JSON objects, CSV records). A field's type is fixed
// by its first non-null value in an accepted row, for the life of the builder, so consecutive batches of one source
// append cleanly; a field that appears later becomes a new nullable column (additive evolution). A row is staged and
// only reaches the batch at end_row(), so a record rejected half-way leaves nothing behind, not even a new column.
// The learned types travel in the source's position (types()/restore_types()), so a resumed run decides exactly as
// an uninterrupted one would.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"

namespace skippr {

struct FieldValue {
  Type type = Type::kString;
  bool null = false;
  int64_t i = 0;       // kInt64, kBool
  double d = 0;        // kDouble
  std::string_view s;  // kString, kJson; must stay valid until end_row()
  // The value as JSON text, asked for only when its column is JSON already (a field that was nested before); the
  // result must stay valid until end_row(). Null: the value has no JSON form (CSV text).
  std::string_view (*as_json)(const void* context) = nullptr;
  const void* as_json_context = nullptr;
};

class RowBuilder {
 public:
  void begin_row();
  // Stages one field. Returns why the row cannot be used (a type that does not fit its column, a duplicate field),
  // or nullopt. A value of another type is taken when it converts without loss (an int64 into a double column, an
  // integral double or a whole decimal string into an int64 one, a numeric string into a double one, anything as
  // JSON text into a JSON column).
  std::optional<std::string> set(std::string_view name, const FieldValue& value);
  void end_row();  // appends the staged row; absent fields are NULL

  const std::map<std::string, Type, std::less<>>& types() const { return types_; }
  void restore_types(std::map<std::string, Type, std::less<>> types) { types_ = std::move(types); }

  size_t rows() const { return batch_.rows; }
  bool empty() const { return batch_.rows == 0; }
  // The rows built so far; the builder starts a new batch (and keeps the types it learned).
  Batch take();

 private:
  int find_column(std::string_view name);  // -1 when this batch has no such column yet
  std::optional<std::string> new_field_problem(std::string_view name) const;
  Batch batch_;
  struct Staged {
    int column;             // -1: a column this batch does not have yet, added at end_row()
    std::string_view name;  // valid until end_row(), like the value
    FieldValue value;
  };
  std::map<std::string, Type, std::less<>> types_;  // every field of an accepted row
  std::vector<std::string> names_;                  // of batch_'s columns, for lookups without allocation
  std::vector<Staged> staged_;
  std::vector<uint64_t> set_in_row_;  // per column: the row stamp that last set it (duplicate check)
  uint64_t row_stamp_ = 0;
  size_t hint_ = 0;  // fields usually arrive in the same order as the last row
};

}  // namespace skippr
