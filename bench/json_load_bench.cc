// JSON lines -> DuckDB: skipprd's File source into its DuckDB sink through the whole engine (reader, WAL commit with
// fdatasync, sink), against DuckDB loading the same file by itself (CREATE TABLE AS SELECT * FROM read_json(...)),
// each into a new database file, one after the other in this process.
//   json_load_bench DIR FILE       (bench/json_load.sh makes FILE with bench/gen_jsonl.py)
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "clients/duckdb/duckdb_client.h"
#include "config/config.h"
#include "engine/reporter.h"
#include "engine/sync.h"

namespace fs = std::filesystem;
using namespace skippr;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double duckdb_alone(const fs::path& db_path, const fs::path& file) {
  auto db = DuckDbDatabase::open(db_path.string());
  if (!db) throw std::runtime_error(db.error().message);
  auto conn = DuckDbConnection::connect(*db);
  if (!conn) throw std::runtime_error(conn.error().message);
  const auto start = Clock::now();
  auto done = conn->execute(fmt::format("CREATE TABLE t AS SELECT * FROM read_json('{}')", file.string()));
  if (!done) throw std::runtime_error(done.error().message);
  return since(start);
}

double pipeline(const fs::path& dir, const fs::path& file, uint64_t& rows) {
  std::ofstream(dir / "skippr.yml") << fmt::format(R"(data_sources:
  events:
    File: {{ path: "{}", format: jsonl }}
data_sinks:
  warehouse:
    DuckDB: {{ path: pipeline.duckdb, table: events }}
pipelines:
  bench:
    data_source: data_sources.events
    data_sink: data_sinks.warehouse
)",
                                                   file.string());
  auto config = load_config(dir / "skippr.yml");
  if (!config) throw std::runtime_error(config.error().message);
  auto settings = settings_from_env();
  if (!settings) throw std::runtime_error(settings.error().message);
  settings->data_dir = dir / "data";
  SyncOptions options;
  options.pipeline = "bench";
  options.once = true;
  auto reporter = make_reporter(OutputMode::kText, stderr);
  const auto start = Clock::now();
  SyncResult result = run_sync(*config, *settings, options, *reporter);
  const double seconds = since(start);
  if (result.exit_code != 0) throw std::runtime_error(result.message);
  rows = result.totals.rows_landed;
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: json_load_bench DIR FILE\n");
    return 2;
  }
  const fs::path dir = fs::absolute(argv[1]);
  const fs::path file = fs::absolute(argv[2]);
  try {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const double alone = duckdb_alone(dir / "alone.duckdb", file);
    uint64_t rows = 0;
    const double ours = pipeline(dir, file, rows);
    const double mb = static_cast<double>(fs::file_size(file)) / 1e6;
    fmt::print(
        "jsonl -> duckdb, {:.0f} MB, {} rows: skipprd {:.2f} s ({:.0f} MB/s), DuckDB's read_json CTAS {:.2f} s "
        "({:.0f} MB/s); ratio {:.2f} (goal <= 1.25)\n",
        mb, rows, ours, mb / ours, alone, mb / alone, ours / alone);
  } catch (const std::exception& e) {
    fmt::print(stderr, "json_load_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
