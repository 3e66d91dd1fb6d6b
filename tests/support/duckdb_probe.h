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

// Runs `sql` (one or more statements) on the database file read-write, creating it when absent: to set up what an
// earlier version left behind.
void duckdb_write(const std::filesystem::path& db, const std::string& sql);

// The same against a fresh in-memory database: for queries over files (read_parquet, read_json, read_csv).
std::vector<std::vector<std::string>> duckdb_memory_rows(const std::string& sql);
std::string duckdb_memory_value(const std::string& sql);
// "<rows> <distinct trip ids> <sum of the rows' hashes>" of the Sample's trips in every Parquet file under `dir`: two
// landings with the same digest hold the same rows, each once.
std::string parquet_digest(const std::filesystem::path& dir);

// Holds the DuckDB file open (and so locked) from a forked process until that process is killed; returns its pid once
// `ready` exists (the child writes it after opening).
int hold_duckdb_file(const std::filesystem::path& db, const std::filesystem::path& ready);

}  // namespace skippr::test
