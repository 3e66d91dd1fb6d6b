#include "clients/duckdb/duckdb_vectors.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

namespace skippr {

std::string_view duckdb_sql_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "BOOLEAN";
    case Type::kInt64:
      return "BIGINT";
    case Type::kDouble:
      return "DOUBLE";
    case Type::kString:
      return "VARCHAR";
    case Type::kBinary:
      return "BLOB";
    // Microseconds since the epoch, UTC, like our timestamps: an instant, not a wall-clock time.
    case Type::kTimestamp:
      return "TIMESTAMPTZ";
    case Type::kDate:
      return "DATE";
    // The json extension is statically part of the libduckdb we ship (no download needed); JSON is VARCHAR underneath.
    case Type::kJson:
      return "JSON";
  }
  return "VARCHAR";
}

namespace {

void mark_nulls(const Column& column, size_t first, size_t count, duckdb_vector vector) {
  if (column.validity.empty()) return;
  duckdb_vector_ensure_validity_writable(vector);
  uint64_t* validity = duckdb_vector_get_validity(vector);
  for (size_t i = 0; i < count; ++i) {
    if (!column.is_valid(first + i)) duckdb_validity_set_row_invalid(validity, i);
  }
}

}  // namespace

void copy_column_to_vector(const Column& column, size_t first, size_t count, duckdb_vector vector) {
  void* data = duckdb_vector_get_data(vector);
  switch (column.type) {
    case Type::kInt64:
    case Type::kDouble:     // the bits of the double, 8 bytes like DuckDB's DOUBLE
    case Type::kTimestamp:  // int64 microseconds, DuckDB's TIMESTAMP(TZ) layout
      std::memcpy(data, column.fixed.data() + first, count * sizeof(int64_t));
      break;
    case Type::kBool: {
      auto* out = static_cast<bool*>(data);
      for (size_t i = 0; i < count; ++i) out[i] = column.fixed[first + i] != 0;
      break;
    }
    case Type::kDate: {  // DuckDB keeps days in 32 bits
      auto* out = static_cast<duckdb_date*>(data);
      for (size_t i = 0; i < count; ++i) out[i].days = static_cast<int32_t>(column.fixed[first + i]);
      break;
    }
    case Type::kString:
    case Type::kBinary:
    case Type::kJson:
      for (size_t i = 0; i < count; ++i) {
        if (!column.is_valid(first + i)) continue;
        std::string_view value = column.string_at(first + i);
        duckdb_vector_assign_string_element_len(vector, i, value.data(), value.size());
      }
      break;
  }
  mark_nulls(column, first, count, vector);
}

void fill_vector_with_nulls(duckdb_vector vector, size_t count) {
  duckdb_vector_ensure_validity_writable(vector);
  uint64_t* validity = duckdb_vector_get_validity(vector);
  for (size_t i = 0; i < count; ++i) duckdb_validity_set_row_invalid(validity, i);
}

std::optional<size_t> first_invalid_utf8_row(const Column& column) {
  if (column.type != Type::kString && column.type != Type::kJson) return std::nullopt;
  // Fast path: when the whole buffer is valid, a row can only be invalid if a boundary splits a character.
  const bool buffer_valid = simdjson::validate_utf8(column.bytes.data(), column.bytes.size());
  const size_t rows = column.size();
  for (size_t row = 0; row < rows; ++row) {
    std::string_view value = column.string_at(row);
    if (value.empty()) continue;
    if (buffer_valid) {
      // A value that starts with a continuation byte (10xxxxxx) is the only way a split can show; check those only.
      const auto lead = static_cast<unsigned char>(value.front());
      const auto next = column.offsets[row + 1] < column.bytes.size()
                            ? static_cast<unsigned char>(column.bytes[column.offsets[row + 1]])
                            : 0;
      if ((lead & 0xC0) != 0x80 && (next & 0xC0) != 0x80) continue;
    }
    if (!simdjson::validate_utf8(value.data(), value.size())) return row;
  }
  return std::nullopt;
}

}  // namespace skippr
