// String literals of the SQL dialects that read backslash escapes inside single quotes (BigQuery's GoogleSQL,
// Databricks' Spark SQL): one writer for both.
#pragma once

#include <string>
#include <string_view>

namespace skippr {

// 'text' with backslash and quote escaped, and newline / carriage return as \n / \r (a literal stays on one line).
std::string backslash_quoted_literal(std::string_view text);

}  // namespace skippr
