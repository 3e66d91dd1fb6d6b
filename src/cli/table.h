// Aligned text tables for the terminal, and the same rows as JSON lines for scripts.
#pragma once

#include <string>
#include <vector>

namespace skippr::cli {

std::string format_table(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows);
std::string format_json_rows(const std::vector<std::string>& columns,
                             const std::vector<std::vector<std::string>>& rows);

}  // namespace skippr::cli
