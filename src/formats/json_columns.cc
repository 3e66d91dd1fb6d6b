#include "formats/json_columns.h"

#include <fmt/format.h>

#include <limits>

#include "formats/field_names.h"

namespace skippr {
namespace {

Type type_of(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::INT64:
      return Type::kInt64;
    case simdjson::dom::element_type::UINT64:
      return v.get_uint64().value() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? Type::kInt64
                                                                                                  : Type::kDouble;
    case simdjson::dom::element_type::DOUBLE:
      return Type::kDouble;
    case simdjson::dom::element_type::STRING:
      return Type::kString;
    case simdjson::dom::element_type::BOOL:
      return Type::kBool;
    default:
      return Type::kJson;  // objects and arrays (null never reaches here)
  }
}

void widen_to_double(Column& column) {
  Column widened(Type::kDouble);
  widened.reserve(column.size());
  for (size_t row = 0; row < column.size(); ++row) {
    if (column.is_valid(row)) {
      widened.append_double(static_cast<double>(column.int_at(row)));
    } else {
      widened.append_null();
    }
  }
  column = std::move(widened);
}

void append_value(simdjson::dom::element v, Column& column) {
  switch (column.type) {
    case Type::kInt64:
      column.append_int(v.get_int64().value());
      break;
    case Type::kDouble:
      column.append_double(v.get_double().value());
      break;
    case Type::kBool:
      column.append_bool(v.get_bool().value());
      break;
    case Type::kString:
      column.append_string(v.get_string().value());
      break;
    default:
      column.append_string(simdjson::minify(v));
      break;
  }
}

}  // namespace

Status append_json_object(simdjson::dom::object object, Batch& batch) {
  std::vector<bool> filled(batch.columns.size(), false);
  for (auto [key, value] : object) {
    int index = batch.schema.index_of(key);
    if (index >= 0 && filled[index]) continue;  // a repeated key: the first one wins
    if (value.is_null()) continue;              // stays null below
    Type type = type_of(value);
    if (index < 0) {
      if (auto problem = unusable_field_name(key)) return fail(ErrorKind::kBadInput, *problem);
      for (const Field& known : batch.schema.fields) {
        if (differ_only_in_case(key, known.name)) {
          return fail(ErrorKind::kBadInput, case_collision_reason(key, known.name));
        }
      }
      batch.add_column({std::string(key), type});
      index = static_cast<int>(batch.columns.size()) - 1;
      filled.push_back(false);
    }
    Column& column = batch.columns[index];
    Field& field = batch.schema.fields[index];
    if (column.type == Type::kInt64 && type == Type::kDouble) {
      widen_to_double(column);
      field.type = Type::kDouble;
    } else if (column.type == Type::kDouble && type == Type::kInt64) {
      type = Type::kDouble;
    }
    if (column.type != type) {
      return fail(ErrorKind::kBadInput, fmt::format("field '{}' is {} here but {} in earlier records", key,
                                                    to_string(type), to_string(column.type)));
    }
    append_value(value, column);
    filled[index] = true;
  }
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    if (!filled[c]) batch.columns[c].append_null();
  }
  batch.rows += 1;
  return ok();
}

Status append_json_text(std::string_view text, std::string_view what, Batch& batch) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return fail(ErrorKind::kBadInput, fmt::format("{} is empty", what));
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(text);
  auto bad = [&](size_t record, const char* problem) {
    return fail(ErrorKind::kBadInput, fmt::format("{}: record {} {}; send a JSON object, an array of objects or "
                                                  "one object a line (NDJSON)",
                                                  what, record, problem));
  };
  if (text[start] == '[') {
    simdjson::dom::element doc;
    if (auto error = parser.parse(padded).get(doc)) {
      return fail(ErrorKind::kBadInput, fmt::format("{} is not valid JSON: {}", what, simdjson::error_message(error)));
    }
    simdjson::dom::array items;
    if (doc.get_array().get(items)) return fail(ErrorKind::kBadInput, fmt::format("{} is not valid JSON", what));
    size_t n = 0;
    for (simdjson::dom::element item : items) {
      ++n;
      simdjson::dom::object object;
      if (item.get_object().get(object)) return bad(n, "is not a JSON object");
      if (auto st = append_json_object(object, batch); !st) return bad(n, st.error().message.c_str());
    }
    return ok();
  }
  simdjson::dom::document_stream stream;
  const size_t batch_size = std::max<size_t>(padded.size() + 64, simdjson::dom::DEFAULT_BATCH_SIZE);
  if (auto error = parser.parse_many(padded, batch_size).get(stream)) {
    return fail(ErrorKind::kBadInput, fmt::format("{} is not valid JSON: {}", what, simdjson::error_message(error)));
  }
  size_t n = 0;
  for (auto it = stream.begin(); it != stream.end(); ++it) {
    ++n;
    simdjson::dom::element doc;
    if (auto error = (*it).get(doc)) return bad(n, simdjson::error_message(error));
    simdjson::dom::object object;
    if (doc.get_object().get(object)) return bad(n, "is not a JSON object");
    if (auto st = append_json_object(object, batch); !st) return bad(n, st.error().message.c_str());
  }
  if (stream.truncated_bytes() > 0) return bad(n + 1, "is incomplete (truncated JSON)");
  if (n == 0) return fail(ErrorKind::kBadInput, fmt::format("{} holds no JSON record", what));
  return ok();
}

}  // namespace skippr
