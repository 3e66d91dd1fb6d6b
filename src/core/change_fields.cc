#include "core/change_fields.h"

#include <fmt/format.h>

#include <algorithm>

namespace skippr {
namespace {

std::string quoted(std::string_view name) { return fmt::format("\"{}\"", name); }

// 38 digits fit DECIMAL(38,0) and HUGEINT alike; a CDC source's LSN plus event index needs about 29.
constexpr size_t kMaxOrderDigits = 38;

Status bad_row(std::string_view where, std::string_view field, size_t row, std::string_view problem) {
  return fail(ErrorKind::kBadInput, fmt::format("{}: field {} in row {} {}", where, quoted(field), row, problem));
}

Status check_op_column(const Column& column, std::string_view where) {
  if (column.type != Type::kString) {
    return fail(ErrorKind::kBadInput, fmt::format("{}: field {} is {}; it must be a string (insert, update or delete)",
                                                  where, quoted(kOpField), to_string(column.type)));
  }
  for (size_t row = 0; row < column.size(); ++row) {
    if (!column.is_valid(row)) continue;  // NULL: an upsert, like an absent field
    const std::string_view op = column.string_at(row);
    if (op != "insert" && op != "update" && op != "delete" && op != kTruncateOp) {
      return bad_row(where, kOpField, row,
                     fmt::format("is '{}'; it must be insert, update, delete, truncate or null", op));
    }
  }
  return ok();
}

Status check_order_column(const Column& column, std::string_view where) {
  constexpr std::string_view kWhat = "must be a non-negative decimal integer (the change's order token)";
  if (column.type != Type::kString && column.type != Type::kInt64) {
    return fail(ErrorKind::kBadInput,
                fmt::format("{}: field {} is {}; it {}", where, quoted(kOrderField), to_string(column.type), kWhat));
  }
  for (size_t row = 0; row < column.size(); ++row) {
    if (!column.is_valid(row)) return bad_row(where, kOrderField, row, fmt::format("is null; it {}", kWhat));
    if (column.type == Type::kInt64) {
      if (column.int_at(row) < 0) return bad_row(where, kOrderField, row, fmt::format("is negative; it {}", kWhat));
      continue;
    }
    const std::string_view token = column.string_at(row);
    if (token.empty() || token.size() > kMaxOrderDigits ||
        !std::ranges::all_of(token, [](char c) { return c >= '0' && c <= '9'; })) {
      return bad_row(where, kOrderField, row,
                     fmt::format("is '{}'; it {} of at most {} digits", token.substr(0, 60), kWhat, kMaxOrderDigits));
    }
  }
  return ok();
}

}  // namespace

bool has_truncates(const Batch& batch) {
  const int op = batch.schema.index_of(kOpField);
  if (op < 0 || batch.columns[static_cast<size_t>(op)].type != Type::kString) return false;
  const Column& column = batch.columns[static_cast<size_t>(op)];
  for (size_t row = 0; row < batch.rows; ++row) {
    if (column.is_valid(row) && column.string_at(row) == kTruncateOp) return true;
  }
  return false;
}

Status check_change_fields(const Batch& batch, const std::vector<size_t>& key_fields, std::string_view where) {
  const bool truncates = has_truncates(batch);
  if (truncates && batch.schema.index_of(kOrderField) < 0) {
    return fail(ErrorKind::kBadInput,
                fmt::format("{}: a truncate needs {} (its order token)", where, quoted(kOrderField)));
  }
  auto is_truncate = [&](size_t row) {
    const Column& ops = batch.columns[static_cast<size_t>(batch.schema.index_of(kOpField))];
    return ops.is_valid(row) && ops.string_at(row) == kTruncateOp;
  };
  for (size_t f : key_fields) {
    const Column& column = batch.columns[f];
    for (size_t row = 0; row < batch.rows; ++row) {
      if (!column.is_valid(row) && !(truncates && is_truncate(row))) {
        return bad_row(where, batch.schema.fields[f].name, row, "is null, but it is part of the primary_key");
      }
    }
  }
  if (int op = batch.schema.index_of(kOpField); op >= 0) SKIPPR_TRY(check_op_column(batch.columns[op], where));
  if (int order = batch.schema.index_of(kOrderField); order >= 0) {
    SKIPPR_TRY(check_order_column(batch.columns[order], where));
  }
  return ok();
}

std::string change_order_token(uint64_t position, uint64_t sequence) {
  unsigned __int128 v = (static_cast<unsigned __int128>(position) << 32) + sequence;
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return {digits.rbegin(), digits.rend()};
}

void add_change_fields(Batch& batch) {
  batch.add_column({std::string(kOpField), Type::kString});
  batch.add_column({std::string(kOrderField), Type::kString});
}

void append_truncate_row(Batch& batch, const std::string& token) {
  const int op = batch.schema.index_of(kOpField);
  const int order = batch.schema.index_of(kOrderField);
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    if (static_cast<int>(c) == op) {
      batch.columns[c].append_string(kTruncateOp);
    } else if (static_cast<int>(c) == order) {
      batch.columns[c].append_string(token);
    } else {
      batch.columns[c].append_null();
    }
  }
  batch.rows += 1;
}

}  // namespace skippr
