// How a batch's types land in ClickHouse: the type of a new column, which existing column types take a field, and
// the RowBinary encoding of each (RowBinary: values back to back in column order, little-endian fixed widths,
// strings as a LEB128 length and bytes, a Nullable value led by a 0 byte or replaced by a 1 byte).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/batch.h"

namespace skippr {

// The type of a new column (every one Nullable: a later batch may lack the field). Timestamps are
// DateTime64(6, 'UTC') where the server has that type; older servers (18.x) only have whole seconds (DateTime).
std::string ch_new_column_type(Type type, bool has_datetime64);

// Whether an existing column of `column_type` (as system.columns spells it) takes a field of `type` without a lossy
// or surprising conversion.
bool ch_column_accepts(std::string_view column_type, Type type);

// The values an integer column holds when narrower than int64 (Int32, UInt8, ...).
std::optional<std::pair<int64_t, int64_t>> ch_int_range(std::string_view column_type);

// How one column is written in RowBinary, decided once per batch from its ClickHouse type.
struct ChColumnEncoding {
  enum class Kind { kInt, kFloat32, kFloat64, kString, kDate, kDate32, kDateTime, kDateTime64 };
  Kind kind = Kind::kString;
  int bytes = 8;          // kInt: the width
  bool is_signed = true;  // kInt
  bool nullable = false;
  int64_t micros_per_unit = 1;  // kDateTime64 with precision < 6: micros per tick
  int64_t units_per_micro = 1;  // kDateTime64 with precision > 6: ticks per micro
};

// nullopt for a type this sink cannot write (Array, Map, Decimal, ...).
std::optional<ChColumnEncoding> ch_encoding(std::string_view column_type);

// Why row `row` of `column` cannot be stored in a column written as `encoding` (a null in a non-Nullable column, a
// date before 1970 in Date, a time outside DateTime's range), or nullopt.
std::optional<std::string> ch_value_problem(const ChColumnEncoding& encoding, const Column& column, size_t row);

// Appends row `row` of `column` in RowBinary. The caller checked ch_value_problem first.
void ch_append_value(const ChColumnEncoding& encoding, const Column& column, size_t row, std::string& out);

// A String value in RowBinary.
void ch_append_string(std::string_view text, std::string& out);

}  // namespace skippr
