#include "sinks/clickhouse/ch_types.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <initializer_list>

namespace skippr {
namespace {

// "Nullable(Int64)" -> "Int64" (and nullable); "LowCardinality(...)" is written as what it wraps.
std::string_view unwrap(std::string_view type, bool* nullable) {
  for (bool again = true; again;) {
    again = false;
    for (std::string_view wrapper : {std::string_view("Nullable("), std::string_view("LowCardinality(")}) {
      if (type.starts_with(wrapper) && type.ends_with(')')) {
        if (wrapper.starts_with("Nullable") && nullable) *nullable = true;
        type = type.substr(wrapper.size(), type.size() - wrapper.size() - 1);
        again = true;
      }
    }
  }
  return type;
}

template <typename T>
void put(T value, std::string& out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian host, as RowBinary is
  out.append(bytes, sizeof(T));
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

}  // namespace

std::string ch_new_column_type(Type type, bool has_datetime64) {
  switch (type) {
    case Type::kBool:
      return "Nullable(UInt8)";
    case Type::kInt64:
      return "Nullable(Int64)";
    case Type::kDouble:
      return "Nullable(Float64)";
    case Type::kString:
    case Type::kBinary:
    case Type::kJson:
      return "Nullable(String)";
    case Type::kTimestamp:
      return has_datetime64 ? "Nullable(DateTime64(6, 'UTC'))" : "Nullable(DateTime('UTC'))";
    case Type::kDate:
      return "Nullable(Date)";
  }
  return "Nullable(String)";
}

bool ch_column_accepts(std::string_view column_type, Type type) {
  const std::string_view base = unwrap(column_type, nullptr);
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names) {
      if (base == n) return true;
    }
    return false;
  };
  switch (type) {
    case Type::kBool:
      return is({"UInt8", "Bool"});
    case Type::kInt64:
      return is({"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"});
    case Type::kDouble:
      return is({"Float32", "Float64"});
    case Type::kString:
    case Type::kBinary:
    case Type::kJson:
      return base == "String";
    case Type::kTimestamp:
      return base == "DateTime" || base.starts_with("DateTime(") || base.starts_with("DateTime64(");
    case Type::kDate:
      return is({"Date", "Date32"});
  }
  return false;
}

std::optional<std::pair<int64_t, int64_t>> ch_int_range(std::string_view column_type) {
  const std::string_view base = unwrap(column_type, nullptr);
  if (base == "Int8") return std::pair<int64_t, int64_t>{INT8_MIN, INT8_MAX};
  if (base == "Int16") return std::pair<int64_t, int64_t>{INT16_MIN, INT16_MAX};
  if (base == "Int32") return std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
  if (base == "UInt8" || base == "Bool") return std::pair<int64_t, int64_t>{0, UINT8_MAX};
  if (base == "UInt16") return std::pair<int64_t, int64_t>{0, UINT16_MAX};
  if (base == "UInt32") return std::pair<int64_t, int64_t>{0, UINT32_MAX};
  if (base == "UInt64") return std::pair<int64_t, int64_t>{0, INT64_MAX};
  return std::nullopt;
}

std::optional<ChColumnEncoding> ch_encoding(std::string_view column_type) {
  ChColumnEncoding e;
  const std::string_view base = unwrap(column_type, &e.nullable);
  using K = ChColumnEncoding::Kind;
  auto integer = [&](int bytes, bool is_signed) {
    e.kind = K::kInt;
    e.bytes = bytes;
    e.is_signed = is_signed;
    return e;
  };
  if (base == "Int8") return integer(1, true);
  if (base == "Int16") return integer(2, true);
  if (base == "Int32") return integer(4, true);
  if (base == "Int64") return integer(8, true);
  if (base == "UInt8" || base == "Bool") return integer(1, false);
  if (base == "UInt16") return integer(2, false);
  if (base == "UInt32") return integer(4, false);
  if (base == "UInt64") return integer(8, false);
  if (base == "Float32")
    e.kind = K::kFloat32;
  else if (base == "Float64")
    e.kind = K::kFloat64;
  else if (base == "String")
    e.kind = K::kString;
  else if (base == "Date")
    e.kind = K::kDate;
  else if (base == "Date32")
    e.kind = K::kDate32;
  else if (base == "DateTime" || base.starts_with("DateTime("))
    e.kind = K::kDateTime;
  else if (base.starts_with("DateTime64(")) {
    e.kind = K::kDateTime64;
    int precision = 3;
    const char* digits = base.data() + 11;
    std::from_chars(digits, base.data() + base.size(), precision);
    if (precision < 0 || precision > 9) return std::nullopt;
    for (int p = precision; p < 6; ++p) e.micros_per_unit *= 10;
    for (int p = 6; p < precision; ++p) e.units_per_micro *= 10;
  } else {
    return std::nullopt;
  }
  return e;
}

std::optional<std::string> ch_value_problem(const ChColumnEncoding& e, const Column& column, size_t row) {
  using K = ChColumnEncoding::Kind;
  if (!column.is_valid(row)) {
    if (e.nullable) return std::nullopt;
    return std::string("is null, and the column is not Nullable");
  }
  const int64_t v = column.type == Type::kDouble || is_variable_length(column.type) ? 0 : column.int_at(row);
  switch (e.kind) {
    case K::kDate:
      if (v < 0 || v > 65535) return fmt::format("is day {} from 1970-01-01, outside ClickHouse Date's range", v);
      return std::nullopt;
    case K::kDate32:
      if (v < INT32_MIN || v > INT32_MAX) return std::string("is outside ClickHouse Date32's range");
      return std::nullopt;
    case K::kDateTime:
      if (v < 0 || floor_div(v, 1'000'000) > UINT32_MAX) {
        return std::string("is a time outside ClickHouse DateTime's range (1970 to 2106)");
      }
      return std::nullopt;
    case K::kDateTime64:
      if (e.units_per_micro > 1 && (v > INT64_MAX / e.units_per_micro || v < INT64_MIN / e.units_per_micro)) {
        return std::string("is a time outside the column's DateTime64 range");
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void ch_append_string(std::string_view text, std::string& out) {
  uint64_t n = text.size();
  do {
    uint8_t byte = n & 0x7f;
    n >>= 7;
    if (n) byte |= 0x80;
    out.push_back(static_cast<char>(byte));
  } while (n);
  out.append(text);
}

void ch_append_value(const ChColumnEncoding& e, const Column& column, size_t row, std::string& out) {
  using K = ChColumnEncoding::Kind;
  if (e.nullable) {
    if (!column.is_valid(row)) {
      out.push_back(1);
      return;
    }
    out.push_back(0);
  }
  switch (e.kind) {
    case K::kInt: {
      const int64_t v = column.int_at(row);
      switch (e.bytes) {
        case 1:
          put(static_cast<uint8_t>(v), out);
          break;
        case 2:
          put(static_cast<uint16_t>(v), out);
          break;
        case 4:
          put(static_cast<uint32_t>(v), out);
          break;
        default:
          put(static_cast<uint64_t>(v), out);
      }
      return;
    }
    case K::kFloat32:
      put(static_cast<float>(column.double_at(row)), out);
      return;
    case K::kFloat64:
      put(column.double_at(row), out);
      return;
    case K::kString:
      ch_append_string(column.string_at(row), out);
      return;
    case K::kDate:
      put(static_cast<uint16_t>(column.int_at(row)), out);
      return;
    case K::kDate32:
      put(static_cast<int32_t>(column.int_at(row)), out);
      return;
    case K::kDateTime:
      put(static_cast<uint32_t>(floor_div(column.int_at(row), 1'000'000)), out);
      return;
    case K::kDateTime64:
      put(e.micros_per_unit > 1 ? floor_div(column.int_at(row), e.micros_per_unit)
                                : column.int_at(row) * e.units_per_micro,
          out);
      return;
  }
}

}  // namespace skippr
