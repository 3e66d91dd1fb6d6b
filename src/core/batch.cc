#include "core/batch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace skippr {

const char* to_string(Type type) {
  switch (type) {
    case Type::kBool:
      return "bool";
    case Type::kInt64:
      return "int64";
    case Type::kDouble:
      return "double";
    case Type::kString:
      return "string";
    case Type::kBinary:
      return "binary";
    case Type::kTimestamp:
      return "timestamp";
    case Type::kDate:
      return "date";
    case Type::kJson:
      return "json";
  }
  return "unknown";
}

std::optional<Type> type_from_string(std::string_view name) {
  for (Type t : {Type::kBool, Type::kInt64, Type::kDouble, Type::kString, Type::kBinary, Type::kTimestamp, Type::kDate,
                 Type::kJson}) {
    if (name == to_string(t)) return t;
  }
  return std::nullopt;
}

bool is_variable_length(Type type) { return type == Type::kString || type == Type::kBinary || type == Type::kJson; }

int Schema::index_of(std::string_view name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Column::Column(Type t) : type(t) {
  if (is_variable_length(t)) offsets.push_back(0);
}

size_t Column::size() const { return is_variable_length(type) ? offsets.size() - 1 : fixed.size(); }

bool Column::is_valid(size_t row) const { return validity.empty() || (validity[row >> 3] >> (row & 7)) & 1; }

std::string_view Column::string_at(size_t row) const {
  return std::string_view(bytes).substr(offsets[row], offsets[row + 1] - offsets[row]);
}

double Column::double_at(size_t row) const {
  double d;
  std::memcpy(&d, &fixed[row], sizeof d);
  return d;
}

void Column::mark_valid_bit(size_t row, bool valid) {
  if (valid && validity.empty()) return;                       // still all-valid
  if (validity.empty()) validity.assign((row + 8) / 8, 0xFF);  // materialise: every earlier row was valid
  if (validity.size() < row / 8 + 1) validity.resize(row / 8 + 1, 0xFF);
  if (valid) {
    validity[row >> 3] |= uint8_t(1u << (row & 7));
  } else {
    validity[row >> 3] &= uint8_t(~(1u << (row & 7)));
  }
}

void Column::append_null() {
  size_t row = size();
  mark_valid_bit(row, false);
  if (is_variable_length(type)) {
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
  } else {
    fixed.push_back(0);
  }
}

void Column::append_int(int64_t v) {
  mark_valid_bit(fixed.size(), true);
  fixed.push_back(v);
}

void Column::append_double(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  append_int(bits);
}

void Column::append_bool(bool v) { append_int(v ? 1 : 0); }

void Column::append_string(std::string_view v) {
  mark_valid_bit(offsets.size() - 1, true);
  bytes.append(v);
  offsets.push_back(static_cast<uint32_t>(bytes.size()));
}

void Column::append_range(const Column& other, size_t begin, size_t end) {
  const size_t first_row = size();
  if (is_variable_length(type)) {
    const uint32_t base = other.offsets[begin];
    const uint32_t shift = static_cast<uint32_t>(bytes.size());
    bytes.append(other.bytes, base, other.offsets[end] - base);
    for (size_t i = begin + 1; i <= end; ++i) offsets.push_back(other.offsets[i] - base + shift);
  } else {
    fixed.insert(fixed.end(), other.fixed.begin() + begin, other.fixed.begin() + end);
  }
  if (other.validity.empty() && validity.empty()) return;
  for (size_t i = begin; i < end; ++i) mark_valid_bit(first_row + (i - begin), other.is_valid(i));
  // mark_valid_bit skips valid rows while the bitmap is empty; make sure it covers every row now.
  if (!validity.empty() && validity.size() < (size() + 7) / 8) validity.resize((size() + 7) / 8, 0xFF);
}

size_t Column::byte_size() const {
  return validity.size() + fixed.size() * sizeof(int64_t) + offsets.size() * sizeof(uint32_t) + bytes.size();
}

void Column::reserve(size_t rows, size_t bytes_hint) {
  if (is_variable_length(type)) {
    offsets.reserve(rows + 1);
    bytes.reserve(bytes_hint);
  } else {
    fixed.reserve(rows);
  }
}

size_t Batch::byte_size() const {
  size_t total = 0;
  for (const auto& c : columns) total += c.byte_size();
  return total;
}

Status Batch::check_shape() const {
  if (columns.size() != schema.fields.size()) {
    return fail(ErrorKind::kInternal,
                fmt::format("batch has {} columns but {} fields", columns.size(), schema.fields.size()));
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    const Column& column = columns[c];
    const Field& field = schema.fields[c];
    if (column.type != field.type || column.size() != rows ||
        (!column.validity.empty() && column.validity.size() < (rows + 7) / 8)) {
      return fail(ErrorKind::kInternal,
                  fmt::format("column '{}' of the batch is inconsistent: type {} vs field type {}, {} rows vs {}",
                              field.name, to_string(column.type), to_string(field.type), column.size(), rows));
    }
  }
  return ok();
}

void Batch::add_column(const Field& field) {
  schema.fields.push_back(field);
  Column column(field.type);
  column.reserve(rows);
  for (size_t i = 0; i < rows; ++i) column.append_null();
  columns.push_back(std::move(column));
}

Status Batch::can_append(const Batch& other) const {
  if (rows == 0 && columns.empty()) return ok();
  if (key != other.key) {
    return fail(ErrorKind::kBadInput, fmt::format("the key of stream '{}' changed from ({}) to ({})", stream,
                                                  fmt::join(key, ", "), fmt::join(other.key, ", ")));
  }
  for (const auto& field : other.schema.fields) {
    int idx = schema.index_of(field.name);
    if (idx >= 0 && schema.fields[idx].type != field.type) {
      return fail(ErrorKind::kBadInput,
                  fmt::format("field '{}' changed type from {} to {}; a type change is not applied silently. "
                              "Cast it in the source or land it in a new table",
                              field.name, to_string(schema.fields[idx].type), to_string(field.type)));
    }
    if (idx >= 0) continue;
    // Two columns whose names differ only in letter case cannot both exist where names fold (DuckDB and others).
    for (const auto& mine : schema.fields) {
      if (mine.name.size() == field.name.size() &&
          std::equal(mine.name.begin(), mine.name.end(), field.name.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
          })) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("field '{}' differs from field '{}' only in letter case; they cannot share a batch",
                                field.name, mine.name));
      }
    }
  }
  return ok();
}

Status Batch::append(const Batch& other) {
  if (rows == 0 && columns.empty()) {
    *this = other;
    return ok();
  }
  // Checked before anything changes, so a refused append leaves this batch as it was.
  SKIPPR_TRY(can_append(other));
  if (rows == 0 && columns.empty()) key = other.key;
  for (const auto& field : other.schema.fields) {
    if (schema.index_of(field.name) < 0) add_column(field);
  }
  for (size_t c = 0; c < schema.fields.size(); ++c) {
    int from = other.schema.index_of(schema.fields[c].name);
    if (from < 0) {
      for (size_t i = 0; i < other.rows; ++i) columns[c].append_null();
    } else {
      columns[c].append_range(other.columns[from], 0, other.rows);
    }
  }
  rows += other.rows;
  return ok();
}

std::string BatchId::str() const {
  if (lineage.empty()) return fmt::format("{}/{}/{}", pipeline, epoch, seq);
  return fmt::format("{}/{}/{}/{}", pipeline, lineage, epoch, seq);
}

Batch rows_of(const Batch& batch, const std::vector<size_t>& rows) {
  Batch out;
  out.stream = batch.stream;
  out.key = batch.key;
  out.schema = batch.schema;
  for (const auto& field : batch.schema.fields) out.columns.emplace_back(field.type);
  for (size_t row : rows) {
    for (size_t c = 0; c < batch.columns.size(); ++c) out.columns[c].append_range(batch.columns[c], row, row + 1);
  }
  out.rows = rows.size();
  return out;
}

size_t total_rows(const std::vector<Batch>& parts) {
  size_t rows = 0;
  for (const Batch& part : parts) rows += part.rows;
  return rows;
}

size_t total_bytes(const std::vector<Batch>& parts) {
  size_t bytes = 0;
  for (const Batch& part : parts) bytes += part.byte_size();
  return bytes;
}

}  // namespace skippr
