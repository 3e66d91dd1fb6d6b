// Peak memory while reading one big file is bounded by BUFFER_THRESHOLD_BYTES, not by the file's size: the same
// pipeline over a 4x larger file must not need much more memory. Measured as the child's max RSS (/usr/bin/time -v).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>

#include "support/jsonl_data.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

struct Measured {
  double max_rss_mb = 0;
  double seconds = 0;
};

Measured sync_one_file(uint64_t bytes) {
  PipelineFixture fixture(R"(data_sources:
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
  JsonlDataSpec spec;
  spec.files = 1;
  spec.big_file_bytes = bytes;
  spec.gzip = false;
  spec.bad_every = 0;
  const JsonlData data = write_jsonl_data(fixture.root(), spec);
  const auto started = std::chrono::steady_clock::now();
  auto r = run_process({"/usr/bin/time", "-v", SKIPPRD_BINARY, "sync", "--pipeline", "files", "--once"}, fixture.root(),
                       {{"DATA_DIR", fixture.path("data").string()},
                        {"SKIPPR_CONFIG_FILE", ""},
                        {"BUFFER_THRESHOLD_BYTES", std::to_string(4 << 20)}});
  Measured m;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch match;
  const std::regex rss("Maximum resident set size \\(kbytes\\): (\\d+)");
  EXPECT_TRUE(std::regex_search(r.err, match, rss)) << r.err;
  if (!match.empty()) m.max_rss_mb = std::stod(match[1]) / 1024.0;
  EXPECT_EQ(duckdb_memory_value(
                fmt::format("SELECT count(*) FROM read_parquet('{}/*.parquet')", fixture.path("out").string())),
            std::to_string(data.good_lines));
  std::cout << fmt::format("{:.0f} MB of JSON lines -> Parquet: max RSS {:.1f} MB, {:.2f} s ({:.1f} MB/s)\n",
                           data.bytes / 1e6, m.max_rss_mb, m.seconds, data.bytes / 1e6 / m.seconds);
  return m;
}

TEST(FilesMemory, PeakRssDoesNotGrowWithTheInputFile) {
  const Measured small = sync_one_file(16ull << 20);
  const Measured large = sync_one_file(64ull << 20);
  EXPECT_LT(large.max_rss_mb, small.max_rss_mb * 1.35 + 16)
      << "peak memory grew with the file: " << small.max_rss_mb << " MB -> " << large.max_rss_mb << " MB";
}

}  // namespace
}  // namespace skippr::test
