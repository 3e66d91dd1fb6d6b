#include "sinks/kit/object_partitions.h"

#include <fmt/format.h>

#include "formats/json_rows.h"

namespace skippr {
namespace {

// Hive's escaping of a partition value: characters that would break a path segment become %XX.
std::string hive_escape(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (c < 0x20 || c == '/' || c == '\\' || c == '=' || c == '%' || c == '"' || c == '\'' || c == ':' || c == '#' ||
        c == '?' || c == '*' || c == '[' || c == ']' || c == '^' || c == '{' || c == 0x7F) {
      out += fmt::format("%{:02X}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// The value of a row as its partition folder shows it: a string as is, anything else as its JSON text.
std::string partition_value(const Column& column, size_t row) {
  if (!column.is_valid(row)) return "__HIVE_DEFAULT_PARTITION__";
  if (column.type == Type::kString) return std::string(column.string_at(row));
  Batch one;
  one.schema.fields.push_back({"v", column.type});
  one.columns.emplace_back(column.type);
  one.columns[0].append_range(column, row, row + 1);
  one.rows = 1;
  std::string json = row_to_json(one, 0);  // {"v":...}
  std::string value = json.substr(5, json.size() - 6);
  if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
  return value;
}

}  // namespace

// Hive-style folders ("col=value/") and the rows of each; without partition_by one object of every row.
ObjectPartitions hive_partitions(const Batch& batch, const std::vector<std::string>& partition_by) {
  ObjectPartitions out;
  if (partition_by.empty()) {
    out[""] = std::nullopt;
    return out;
  }
  std::vector<int> fields;
  for (const auto& name : partition_by) fields.push_back(batch.schema.index_of(name));
  for (size_t row = 0; row < batch.rows; ++row) {
    std::string folder;
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string value =
          fields[i] < 0 ? "__HIVE_DEFAULT_PARTITION__" : partition_value(batch.columns[fields[i]], row);
      folder += hive_escape(partition_by[i]) + "=" + hive_escape(value) + "/";
    }
    auto& rows = out[folder];
    if (!rows) rows.emplace();
    rows->push_back(row);
  }
  return out;
}

}  // namespace skippr
