// Sample -> DuckDB through the whole engine (reader, WAL commit with fdatasync, DuckDB sink) against DuckDB's own
// insert of the same generated rows with no WAL: the same Sample batches, cut at the same BUFFER_THRESHOLD_BYTES,
// appended by the DuckDB appender (the sink's write, which is DuckDB's data-chunk appender API) one transaction per
// batch. Only the appends are timed on that side; generating the rows is not.
//   duckdb_bench DIR ROWS
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "engine/reporter.h"
#include "engine/sync.h"

namespace fs = std::filesystem;
using namespace skippr;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Config write_config(const fs::path& dir, uint64_t rows) {
  fs::create_directories(dir);
  std::ofstream(dir / "skippr.yml") << fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 1 }}
data_sinks:
  pipeline_db:
    DuckDB: {{ path: pipeline.duckdb, table: trips }}
  direct_db:
    DuckDB: {{ path: direct.duckdb, table: trips }}
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.pipeline_db
)",
                                                   rows);
  auto config = load_config(dir / "skippr.yml");
  if (!config) throw std::runtime_error(config.error().message);
  return std::move(*config);
}

ConnectorContext context(const ConnectorConfig& c, const fs::path& dir) {
  ConnectorContext ctx;
  ctx.name = c.name;
  ctx.pipeline = "direct";
  ctx.params = c.params;
  ctx.pipeline_dir = dir;
  return ctx;
}

// Rows per second of the sink's appends alone, batches cut like the engine cuts them.
double direct_rate(const Config& config, const Settings& settings, const fs::path& dir) {
  auto source = config.sources.at("sample").spec->make_source(context(config.sources.at("sample"), dir));
  auto sink = config.sinks.at("direct_db").spec->make_sink(context(config.sinks.at("direct_db"), dir));
  if (!source || !sink) throw std::runtime_error("cannot make the connectors");
  if (auto st = (*source)->open(); !st) throw std::runtime_error(st.error().message);
  if (auto st = (*sink)->open(); !st) throw std::runtime_error(st.error().message);
  double seconds = 0;
  uint64_t rows = 0, seq = 0;
  Batch pending;
  auto write = [&] {
    const auto start = Clock::now();
    auto written = (*sink)->write(pending, BatchId{"direct", 1, ++seq});
    seconds += since(start);
    if (!written) throw std::runtime_error(written.error().message);
    rows += pending.rows;
    pending = Batch{};
  };
  while (true) {
    Budget budget;
    budget.max_bytes = settings.buffer_threshold_bytes - std::min(settings.buffer_threshold_bytes, pending.byte_size());
    auto polled = (*source)->poll(budget);
    if (!polled) throw std::runtime_error(polled.error().message);
    if (polled->records.rows > 0) {
      if (pending.rows == 0)
        pending = std::move(polled->records);
      else if (auto st = pending.append(polled->records); !st)
        throw std::runtime_error(st.error().message);
    }
    if (pending.rows > 0 && (pending.byte_size() >= settings.buffer_threshold_bytes || polled->drained)) write();
    if (polled->drained) break;
  }
  return static_cast<double>(rows) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: duckdb_bench DIR ROWS [pipeline|direct|both]\n");
    return 2;
  }
  const fs::path dir = fs::absolute(argv[1]);
  const uint64_t rows = std::stoull(argv[2]);
  const std::string which = argc > 3 ? argv[3] : "both";
  try {
    fs::remove_all(dir);
    Config config = write_config(dir, rows);
    auto settings = settings_from_env();  // BUFFER_THRESHOLD_BYTES and friends as the daemon reads them
    if (!settings) throw std::runtime_error(settings.error().message);
    settings->data_dir = dir / "data";
    double pipeline = 0, direct = 0;
    if (which != "direct") {
      SyncOptions options;
      options.pipeline = "bench";
      options.once = true;
      auto reporter = make_reporter(OutputMode::kText, stderr);
      const auto start = Clock::now();
      SyncResult result = run_sync(config, *settings, options, *reporter);
      const double seconds = since(start);
      if (result.exit_code != 0) throw std::runtime_error(result.message);
      pipeline = static_cast<double>(result.totals.rows_landed) / seconds;
      fmt::print("sample -> duckdb, {} rows: pipeline (WAL + fdatasync + sink) {:.0f} rows/s\n", rows, pipeline);
    }
    if (which != "pipeline") {
      direct = direct_rate(config, *settings, dir);
      fmt::print("sample -> duckdb, {} rows: DuckDB's own insert (appender, no WAL) {:.0f} rows/s\n", rows, direct);
    }
    if (pipeline > 0 && direct > 0)
      fmt::print("sample -> duckdb ratio {:.1f} % of DuckDB's own insert\n", 100 * pipeline / direct);
  } catch (const std::exception& e) {
    fmt::print(stderr, "duckdb_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
