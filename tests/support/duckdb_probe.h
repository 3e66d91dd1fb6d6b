// Test support: read a DuckDB file independently of the sink under test (its own connection, plain SQL).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace skippr::test {

// Runs `sql` on the database file (read-only) and returns every row as strings ("NULL" for nulls).
// Throws std::runtime_error with DuckDB's message on failure.
std::vector<std::vector<std::string>> duckdb_rows(const std::filesystem::path& db, const std::string& sql);
// The single value of a one-row, one-column query.
std::string duckdb_value(const std::filesystem::path& db, const std::string& sql);

}  // namespace skippr::test
