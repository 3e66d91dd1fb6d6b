#include "sources/google_analytics/report_rows.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "sources/google_analytics/report_dates.h"

namespace skippr {
namespace {

std::vector<std::string> header_names(const nlohmann::json& answer, const char* key) {
  std::vector<std::string> names;
  if (!answer.contains(key) || !answer[key].is_array()) return names;
  for (const auto& header : answer[key]) names.push_back(header.value("name", ""));
  return names;
}

Type metric_type(const std::string& ga_type) { return ga_type == "TYPE_INTEGER" ? Type::kInt64 : Type::kDouble; }

// The value of a cell as its column's type; false when it does not read as one.
bool append_value(Column& column, const std::string& text) {
  switch (column.type) {
    case Type::kDate: {
      auto days = parse_report_date(text);
      if (!days) return false;
      column.append_int(*days);
      return true;
    }
    case Type::kInt64: {
      int64_t value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size()) return false;
      column.append_int(value);
      return true;
    }
    case Type::kDouble: {
      double value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return false;
      column.append_double(value);
      return true;
    }
    default:
      column.append_string(text);
      return true;
  }
}

}  // namespace

Result<ReportPage> report_page(const nlohmann::json& answer, const std::string& origin) {
  ReportPage page;
  page.row_count = answer.value("rowCount", uint64_t{0});
  const auto dimensions = header_names(answer, "dimensionHeaders");
  const auto metrics = header_names(answer, "metricHeaders");
  for (const auto& name : dimensions)
    page.rows.schema.fields.push_back({name, name == "date" ? Type::kDate : Type::kString});
  for (size_t m = 0; m < metrics.size(); ++m) {
    page.rows.schema.fields.push_back({metrics[m], metric_type(answer["metricHeaders"][m].value("type", ""))});
  }
  for (const auto& field : page.rows.schema.fields) page.rows.columns.emplace_back(field.type);
  if (!answer.contains("rows")) return page;
  if (!answer["rows"].is_array()) return fail(ErrorKind::kUnavailable, fmt::format("{}: rows is not a list", origin));
  for (const auto& row : answer["rows"]) {
    ++page.received;
    const auto& dims = row.value("dimensionValues", nlohmann::json::array());
    const auto& values = row.value("metricValues", nlohmann::json::array());
    if (!dims.is_array() || !values.is_array() || dims.size() != dimensions.size() || values.size() != metrics.size()) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("{}: a row has {} dimension and {} metric values for {} and {} headers", origin,
                              dims.size(), values.size(), dimensions.size(), metrics.size()));
    }
    std::vector<std::string> cells;
    for (const auto& v : dims) cells.push_back(v.value("value", ""));
    for (const auto& v : values) cells.push_back(v.value("value", ""));
    // Checked whole before any column grows, so a bad row leaves no partial values behind.
    Batch probe;
    for (const auto& field : page.rows.schema.fields) probe.columns.emplace_back(field.type);
    size_t bad_cell = cells.size();
    for (size_t c = 0; c < cells.size() && bad_cell == cells.size(); ++c) {
      if (!append_value(probe.columns[c], cells[c])) bad_cell = c;
    }
    if (bad_cell < cells.size()) {
      const Field& field = page.rows.schema.fields[bad_cell];
      page.bad.push_back({origin, page.received,
                          fmt::format("{} '{}' is not a {} value", field.name, cells[bad_cell], to_string(field.type)),
                          row.dump()});
      continue;
    }
    for (size_t c = 0; c < cells.size(); ++c) page.rows.columns[c].append_range(probe.columns[c], 0, 1);
    ++page.rows.rows;
  }
  return page;
}

}  // namespace skippr
