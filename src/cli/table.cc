#include "cli/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace skippr::cli {

std::string format_table(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    width[c] = columns[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      out += c + 1 == cells.size() ? cells[c] : fmt::format("{:<{}}  ", cells[c], width[c]);
    }
    out += '\n';
  };
  line(columns);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : rows) line(row);
  return out;
}

std::string format_json_rows(const std::vector<std::string>& columns,
                             const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  for (const auto& row : rows) {
    nlohmann::json j = nlohmann::json::object();
    for (size_t c = 0; c < columns.size(); ++c) j[columns[c]] = row[c];
    out += j.dump() + '\n';
  }
  return out;
}

}  // namespace skippr::cli
