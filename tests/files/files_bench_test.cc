// Benchmark mode (skipped unless SKIPPR_BENCH_DIR is set; bench/files.sh runs it): JSON lines -> Parquet through
// skipprd (WAL, fsyncs and all) against DuckDB's own COPY (SELECT * FROM read_json(...)) TO ... (FORMAT parquet) on
// the same files, through DuckDB's C API. Prints both throughputs and the ratio.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "support/jsonl_data.h"
#include "clients/duckdb/duckdb_client.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

double seconds_of(const std::function<void()>& f) {
  const auto started = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

TEST(FilesBench, JsonlToParquetAgainstDuckDbsOwnCopy) {
  const char* dir_env = std::getenv("SKIPPR_BENCH_DIR");
  if (!dir_env) GTEST_SKIP() << "set SKIPPR_BENCH_DIR to run the benchmark (bench/files.sh does)";
  const std::filesystem::path dir = dir_env;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  JsonlDataSpec spec;
  spec.files = std::atoi(std::getenv("SKIPPR_BENCH_FILES") ? std::getenv("SKIPPR_BENCH_FILES") : "100");
  spec.big_file_bytes =
      std::strtoull(std::getenv("SKIPPR_BENCH_BIG_MB") ? std::getenv("SKIPPR_BENCH_BIG_MB") : "64", nullptr, 10) << 20;
  spec.gzip = false;
  spec.bad_every = 0;
  const JsonlData data = write_jsonl_data(dir, spec);
  write_text(dir / "skippr.yml", R"(data_sources:
  inbox:
    File: { path: "in/**/*.jsonl" }
data_sinks:
  lake:
    File: { path: out, format: parquet }
pipelines:
  files:
    data_source: data_sources.inbox
    data_sink: data_sinks.lake
)");
  ProcessResult r;
  const double skippr_s = seconds_of([&] {
    r = run_process({SKIPPRD_BINARY, "sync", "--pipeline", "files", "--once"}, dir,
                    {{"DATA_DIR", (dir / "data").string()}, {"SKIPPR_CONFIG_FILE", ""}});
  });
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto db = DuckDbDatabase::open(":memory:");
  ASSERT_TRUE(db);
  auto conn = DuckDbConnection::connect(*db);
  ASSERT_TRUE(conn);
  const double duckdb_s = seconds_of([&] {
    auto st = conn->execute(fmt::format(
        "COPY (SELECT * FROM read_json('{}/in/**/*.jsonl', format = 'newline_delimited', union_by_name = true)) TO "
        "'{}/duckdb.parquet' (FORMAT parquet, COMPRESSION zstd)",
        dir.string(), dir.string()));
    ASSERT_TRUE(st) << st.error().message;
  });
  const std::string rows =
      duckdb_memory_value(fmt::format("SELECT count(*) FROM read_parquet('{}/out/*.parquet')", (dir).string()));
  EXPECT_EQ(rows, std::to_string(data.good_lines));
  const double mb = data.bytes / 1e6;
  std::cout << fmt::format(
      "files bench: {} files, {:.0f} MB JSON lines, {} rows\n"
      "  skipprd File -> Parquet : {:6.2f} s  {:7.1f} MB/s\n"
      "  DuckDB COPY read_json   : {:6.2f} s  {:7.1f} MB/s\n"
      "  ratio skipprd / DuckDB throughput: {:.2f}\n",
      spec.files, mb, data.good_lines, skippr_s, mb / skippr_s, duckdb_s, mb / duckdb_s, duckdb_s / skippr_s);
}

}  // namespace
}  // namespace skippr::test
