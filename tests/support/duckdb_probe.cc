#include "support/duckdb_probe.h"

#include <duckdb.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <stdexcept>

#include "support/process.h"

namespace skippr::test {

namespace {

// Opens `db` (read-only unless `writable`), or an in-memory database when `db` is empty.
std::vector<std::vector<std::string>> query_rows(const std::filesystem::path& db, const std::string& sql,
                                                 bool writable = false) {
  duckdb_database database = nullptr;
  duckdb_connection connection = nullptr;
  duckdb_config config = nullptr;
  duckdb_create_config(&config);
  if (!db.empty() && !writable) duckdb_set_config(config, "access_mode", "READ_ONLY");
  char* open_error = nullptr;
  if (duckdb_open_ext(db.empty() ? ":memory:" : db.c_str(), &database, config, &open_error) != DuckDBSuccess) {
    std::string message = open_error ? open_error : "unknown error";
    duckdb_free(open_error);
    duckdb_destroy_config(&config);
    throw std::runtime_error("cannot open " + db.string() + ": " + message);
  }
  duckdb_destroy_config(&config);
  duckdb_connect(database, &connection);
  duckdb_result result;
  std::vector<std::vector<std::string>> rows;
  std::string error;
  if (duckdb_query(connection, sql.c_str(), &result) != DuckDBSuccess) {
    error = duckdb_result_error(&result);
  } else {
    const idx_t columns = duckdb_column_count(&result);
    const idx_t count = duckdb_row_count(&result);
    for (idx_t r = 0; r < count; ++r) {
      std::vector<std::string> row;
      for (idx_t c = 0; c < columns; ++c) {
        if (duckdb_value_is_null(&result, c, r)) {
          row.push_back("NULL");
          continue;
        }
        char* text = duckdb_value_varchar(&result, c, r);
        row.push_back(text ? text : "");
        duckdb_free(text);
      }
      rows.push_back(std::move(row));
    }
  }
  duckdb_destroy_result(&result);
  duckdb_disconnect(&connection);
  duckdb_close(&database);
  if (!error.empty()) throw std::runtime_error(error + " in: " + sql);
  return rows;
}

std::string single_value(const std::vector<std::vector<std::string>>& rows, const std::string& sql) {
  if (rows.size() != 1 || rows[0].size() != 1) throw std::runtime_error("expected one value from: " + sql);
  return rows[0][0];
}

}  // namespace

std::vector<std::vector<std::string>> duckdb_rows(const std::filesystem::path& db, const std::string& sql) {
  if (db.empty()) throw std::runtime_error("duckdb_rows needs a database file; use duckdb_memory_rows");
  return query_rows(db, sql);
}

void duckdb_write(const std::filesystem::path& db, const std::string& sql) {
  if (db.empty()) throw std::runtime_error("duckdb_write needs a database file");
  (void)query_rows(db, sql, /*writable=*/true);
}

std::string duckdb_value(const std::filesystem::path& db, const std::string& sql) {
  return single_value(duckdb_rows(db, sql), sql);
}

std::vector<std::vector<std::string>> duckdb_memory_rows(const std::string& sql) { return query_rows({}, sql); }

std::string duckdb_memory_value(const std::string& sql) { return single_value(duckdb_memory_rows(sql), sql); }

int hold_duckdb_file(const std::filesystem::path& db, const std::filesystem::path& ready) {
  const pid_t pid = fork();
  if (pid == 0) {
    duckdb_database database;
    if (duckdb_open(db.c_str(), &database) != DuckDBSuccess) _exit(1);
    write_text(ready, "ready");
    pause();
    _exit(0);
  }
  for (int i = 0; i < 200 && !std::filesystem::exists(ready); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pid;
}

std::string parquet_digest(const std::filesystem::path& dir) {
  return duckdb_memory_value(
      fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || sum(hash(trip_id, "
                  "rider_id, bike_id, event_type, event_time, station, duration_s, firmware, "
                  "metadata::VARCHAR)::HUGEINT) FROM read_parquet('{}/**/*.parquet')",
                  dir.string()));
}

}  // namespace skippr::test
