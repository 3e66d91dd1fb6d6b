// DuckDB loading a file by itself, the peer that bench/file_load.sh sets skipprd against (each into a new database
// file or output in DIR, one after the other):
//   json   CREATE TABLE t AS SELECT * FROM read_json(JSONL)
//   csv    CREATE TABLE t AS SELECT * FROM read_csv(CSV)
//   parquet COPY (SELECT * FROM read_json(JSONL)) TO DIR/alone.parquet (FORMAT parquet, COMPRESSION zstd), the
//           File sink's default compression
// Prints one line per load: "NAME SECONDS". Writes CSV first from JSONL when it is absent (DuckDB's own COPY, so the
// CSV holds the same records; nested values become text columns).
//   file_load_bench DIR JSONL CSV
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "clients/duckdb/duckdb_client.h"

namespace fs = std::filesystem;
using namespace skippr;
using Clock = std::chrono::steady_clock;

namespace {

// Runs `sql` against a new database at `db_path` and returns the seconds it took, closing included (DuckDB's last
// checkpoint belongs to the load).
double timed(const fs::path& db_path, const std::string& sql) {
  const auto start = Clock::now();
  {
    auto db = DuckDbDatabase::open(db_path.string());
    if (!db) throw std::runtime_error(db.error().message);
    auto conn = DuckDbConnection::connect(*db);
    if (!conn) throw std::runtime_error(conn.error().message);
    if (auto done = conn->execute(sql); !done) throw std::runtime_error(done.error().message);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fmt::print(stderr, "usage: file_load_bench DIR JSONL CSV\n");
    return 2;
  }
  const fs::path dir = fs::absolute(argv[1]);
  const fs::path jsonl = fs::absolute(argv[2]);
  const fs::path csv = fs::absolute(argv[3]);
  try {
    fs::create_directories(dir);
    if (!fs::exists(csv)) {
      timed(":memory:",
            fmt::format("COPY (SELECT * FROM read_json('{}')) TO '{}' (HEADER)", jsonl.string(), csv.string()));
    }
    fmt::print("json {:.3f}\n", timed(dir / "alone-json.duckdb",
                                      fmt::format("CREATE TABLE t AS SELECT * FROM read_json('{}')", jsonl.string())));
    fmt::print("csv {:.3f}\n", timed(dir / "alone-csv.duckdb",
                                     fmt::format("CREATE TABLE t AS SELECT * FROM read_csv('{}')", csv.string())));
    fmt::print(
        "parquet {:.3f}\n",
        timed(":memory:", fmt::format("COPY (SELECT * FROM read_json('{}')) TO '{}' (FORMAT parquet, COMPRESSION zstd)",
                                      jsonl.string(), (dir / "alone.parquet").string())));
  } catch (const std::exception& e) {
    fmt::print(stderr, "file_load_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
