#include "sinks/kit/conform_batch.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/change_fields.h"
#include "core/lossless.h"
#include "formats/json_rows.h"

namespace skippr {

namespace {

constexpr Type kCandidates[] = {Type::kInt64, Type::kDouble,    Type::kBool, Type::kString,
                                Type::kJson,  Type::kTimestamp, Type::kDate, Type::kBinary};

using IntRange = std::optional<std::pair<int64_t, int64_t>>;

bool convert_value(const Column& column, size_t row, Type target, Column& out);

// As convert_value, and an integer must also lie in the column's range.
bool convert_in_range(const Column& column, size_t row, Type target, const IntRange& range, Column& out) {
  if (!convert_value(column, row, target, out)) return false;
  if (!range || target != Type::kInt64) return true;
  const int64_t v = out.int_at(out.size() - 1);
  return v >= range->first && v <= range->second;  // `out` is scratch: a refused row is dropped whole
}

// A value of `column` at `row` converted to `target`, appended to `out`; false (nothing appended) when it does not
// convert without loss.
bool convert_value(const Column& column, size_t row, Type target, Column& out) {
  const Type from = column.type;
  const bool textual = from == Type::kString || from == Type::kJson;
  if (from == target) {  // a value checked against the column (range, size, text) rather than converted
    out.append_range(column, row, row + 1);
    return true;
  }
  switch (target) {
    case Type::kInt64: {
      if (from == Type::kBool || from == Type::kInt64) {
        out.append_int(column.int_at(row));
        return true;
      }
      const auto v = from == Type::kDouble ? integral_value(column.double_at(row))
                     : textual             ? whole_number(column.string_at(row))
                                           : std::nullopt;
      if (v) out.append_int(*v);
      return v.has_value();
    }
    case Type::kDouble: {
      if (from == Type::kInt64) {
        constexpr int64_t kExact = int64_t{1} << 53;  // beyond it a double rounds some integers
        const int64_t v = column.int_at(row);
        if (v > kExact || v < -kExact) return false;
        out.append_double(static_cast<double>(v));
        return true;
      }
      const auto v = textual ? decimal_number(column.string_at(row)) : std::nullopt;
      if (v) out.append_double(*v);
      return v.has_value();
    }
    case Type::kBool: {
      if (from == Type::kInt64 && (column.int_at(row) == 0 || column.int_at(row) == 1)) {
        out.append_bool(column.int_at(row) == 1);
        return true;
      }
      if (!textual) return false;
      const std::string_view s = column.string_at(row);
      if (s != "true" && s != "false") return false;
      out.append_bool(s == "true");
      return true;
    }
    case Type::kString:
    case Type::kJson: {
      std::string text;
      switch (from) {
        case Type::kInt64:
          text = std::to_string(column.int_at(row));
          break;
        case Type::kDouble:
          text = fmt::format("{}", column.double_at(row));  // the shortest form that reads back exactly
          break;
        case Type::kBool:
          text = column.int_at(row) != 0 ? "true" : "false";
          break;
        case Type::kString:
          text = target == Type::kJson ? nlohmann::json(std::string(column.string_at(row))).dump()
                                       : std::string(column.string_at(row));
          break;
        case Type::kJson:
          text = std::string(column.string_at(row));
          break;
        default:
          return false;  // timestamps, dates and bytes: no text form is chosen for them silently
      }
      out.append_string(text);
      return true;
    }
    default:
      return false;
  }
}

void append_as_is(const Column& column, size_t row, Column& out) { out.append_range(column, row, row + 1); }

}  // namespace

std::optional<Type> column_value_type(std::string_view column_type, const ColumnRules& rules) {
  for (Type t : kCandidates) {
    if (rules.accepts(column_type, t)) return t;
  }
  return std::nullopt;
}

Result<std::optional<ConformedBatch>> conform_batch(const Batch& batch, const std::vector<TableColumn>& columns,
                                                    const ColumnRules& rules, std::string_view where) {
  struct Conversion {
    size_t field;
    Type target;
    const TableColumn* column;
    IntRange range;
    std::optional<double> limit = {};
  };
  auto numeric = [](Type t) { return t == Type::kInt64 || t == Type::kDouble; };
  auto magnitude = [](const Column& values, size_t row) {
    return std::fabs(values.type == Type::kDouble ? values.double_at(row) : static_cast<double>(values.int_at(row)));
  };
  auto beyond = [&](const Column& values, double limit) {
    for (size_t row = 0; row < batch.rows; ++row) {
      if (values.is_valid(row) && magnitude(values, row) >= limit) return true;  // NaN fits numeric
    }
    return false;
  };
  auto textual = [](Type t) { return t == Type::kString || t == Type::kJson; };
  auto has_text_problem = [&](const Column& values, const TableColumn& column) {
    for (size_t row = 0; row < batch.rows; ++row) {
      if (values.is_valid(row) && rules.text_problem(column.type, values.string_at(row))) return true;
    }
    return false;
  };
  std::vector<Conversion> conversions;
  for (size_t f = 0; f < batch.schema.fields.size(); ++f) {
    const Field& field = batch.schema.fields[f];
    if (is_change_field(field.name)) continue;
    const TableColumn* column = find_column(columns, field.name, rules);
    if (column == nullptr) continue;
    const IntRange range = rules.int_range ? rules.int_range(column->type) : std::nullopt;
    const std::optional<double> limit = rules.magnitude_limit ? rules.magnitude_limit(column->type) : std::nullopt;
    if (rules.accepts(column->type, field.type)) {
      // Taken as it is, unless a number too large for the column is among them (checked row by row below)...
      if (limit && numeric(field.type) && beyond(batch.columns[f], *limit)) {
        conversions.push_back({f, field.type, column, range, limit});
        continue;
      }
      // ... or a text value the column cannot hold...
      if (textual(field.type) && rules.text_problem && has_text_problem(batch.columns[f], *column)) {
        conversions.push_back({f, field.type, column, range, limit});
        continue;
      }
      // ... or an integer column narrower than int64 meets a value outside its range.
      if (!range || field.type != Type::kInt64) continue;
      const Column& values = batch.columns[f];
      bool outside = false;
      for (size_t row = 0; row < batch.rows && !outside; ++row) {
        outside = values.is_valid(row) && (values.int_at(row) < range->first || values.int_at(row) > range->second);
      }
      if (!outside) continue;
      conversions.push_back({f, Type::kInt64, column, range, limit});
      continue;
    }
    auto target = column_value_type(column->type, rules);
    if (!target) {
      return fail(
          ErrorKind::kConfig,
          fmt::format("{}: column {} is {}, which this sink cannot fill from field {} ({}) or any other "
                      "type; alter the column or land in a new table",
                      where, rules.quote(column->name), column->type, rules.quote(field.name), to_string(field.type)));
    }
    conversions.push_back({f, *target, column, range, limit});
  }
  if (conversions.empty()) return std::optional<ConformedBatch>();

  ConformedBatch out;
  out.batch.schema = batch.schema;
  for (const auto& c : conversions) out.batch.schema.fields[c.field].type = c.target;
  for (const auto& field : out.batch.schema.fields) out.batch.columns.emplace_back(field.type);
  std::vector<int> target_of(batch.columns.size(), -1);
  for (size_t i = 0; i < conversions.size(); ++i) target_of[conversions[i].field] = static_cast<int>(i);

  for (size_t row = 0; row < batch.rows; ++row) {
    // Convert into scratch columns first: a row is taken whole or not at all.
    std::optional<std::string> reason;
    std::vector<Column> converted;
    converted.reserve(conversions.size());
    for (const auto& c : conversions) {
      Column& scratch = converted.emplace_back(c.target);
      const Column& source = batch.columns[c.field];
      if (!source.is_valid(row)) {
        scratch.append_null();
      } else if (!convert_in_range(source, row, c.target, c.range, scratch)) {
        reason = fmt::format("{}: field {} is {} but column {} is {}, and this value does not fit it without loss",
                             where, rules.quote(batch.schema.fields[c.field].name),
                             to_string(batch.columns[c.field].type), rules.quote(c.column->name), c.column->type);
        break;
      } else if (c.limit && numeric(c.target) && magnitude(scratch, scratch.size() - 1) >= *c.limit) {
        reason =
            fmt::format("{}: field {}: the value is too large for column {} ({})", where,
                        rules.quote(batch.schema.fields[c.field].name), rules.quote(c.column->name), c.column->type);
        break;
      } else if (textual(c.target) && rules.text_problem) {
        if (auto problem = rules.text_problem(c.column->type, scratch.string_at(scratch.size() - 1))) {
          reason = fmt::format("{}: field {}: the value {}", where, rules.quote(batch.schema.fields[c.field].name),
                               *problem);
          break;
        }
      }
    }
    if (reason) {
      std::string record;
      append_row_json(batch, row, record);
      out.rejected.push_back({row, std::move(*reason), std::move(record)});
      continue;
    }
    for (size_t f = 0; f < batch.columns.size(); ++f) {
      if (target_of[f] >= 0) {
        append_as_is(converted[static_cast<size_t>(target_of[f])], 0, out.batch.columns[f]);
      } else {
        append_as_is(batch.columns[f], row, out.batch.columns[f]);
      }
    }
    ++out.batch.rows;
  }
  return std::optional<ConformedBatch>(std::move(out));
}

std::string rejects_create_sql(std::string_view rejects, std::string_view text_type) {
  return fmt::format(
      "CREATE TABLE IF NOT EXISTS {0} (batch_id {1} NOT NULL, \"row\" BIGINT NOT NULL, reason {1}, record {1}, "
      "rejected_at TIMESTAMPTZ DEFAULT now())",
      rejects, text_type);
}

std::vector<std::string> rejects_insert_sql(std::string_view rejects, std::string_view batch_id,
                                            const std::vector<RejectedRow>& rows,
                                            std::string (*quote_literal)(std::string_view),
                                            std::string (*quote_identifier)(std::string_view),
                                            std::string_view condition) {
  constexpr size_t kRowsPerStatement = 500;
  const std::string row_column = quote_identifier ? quote_identifier("row") : "\"row\"";
  std::vector<std::string> statements;
  for (size_t first = 0; first < rows.size(); first += kRowsPerStatement) {
    std::string sql = fmt::format("INSERT INTO {} (batch_id, {}, reason, record) ", rejects, row_column);
    // With a condition, the rows are a derived table of SELECTs (GoogleSQL has no VALUES table), filtered by it.
    sql += condition.empty() ? "VALUES " : "SELECT * FROM (";
    const size_t last = std::min(rows.size(), first + kRowsPerStatement);
    for (size_t i = first; i < last; ++i) {
      const std::string values = fmt::format("{}, {}, {}, {}", quote_literal(batch_id), rows[i].row,
                                             quote_literal(rows[i].reason), quote_literal(rows[i].record));
      if (condition.empty()) {
        sql += fmt::format("{}({})", i > first ? ", " : "", values);
      } else if (i == first) {
        sql += fmt::format("SELECT {} AS batch_id, {} AS {}, {} AS reason, {} AS record", quote_literal(batch_id),
                           rows[i].row, row_column, quote_literal(rows[i].reason), quote_literal(rows[i].record));
      } else {
        sql += " UNION ALL SELECT " + values;
      }
    }
    if (!condition.empty()) sql += fmt::format(") AS rejected_rows WHERE {}", condition);
    statements.push_back(std::move(sql));
  }
  return statements;
}

}  // namespace skippr
