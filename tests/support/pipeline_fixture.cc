#include "support/pipeline_fixture.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace skippr::test {

std::string jsonl_files_to_sink_config(const std::string& path_glob, const std::string& sink,
                                       const std::string& pipeline) {
  return fmt::format(R"(data_sources:
  files:
    File: {{ path: "{}", format: jsonl }}
data_sinks:
  warehouse:
    {}
pipelines:
  {}:
    data_source: data_sources.files
    data_sink: data_sinks.warehouse
)",
                     path_glob, sink, pipeline);
}

std::string sample_to_sink_config(const std::string& sink, uint64_t rows, uint64_t seed) {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: {} }}
data_sinks:
  warehouse:
    {}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
)",
                     rows, seed, sink);
}

std::string sample_to_duckdb_config(uint64_t rows, uint64_t seed, const std::string& db) {
  return sample_to_sink_config(fmt::format("DuckDB: {{ path: {}, table: trips }}", db), rows, seed);
}

TableDigest trips_digest(const std::filesystem::path& db) {
  auto row = duckdb_rows(db,
                         "SELECT count(*), count(DISTINCT trip_id), "
                         "sum(hash(trip_id, rider_id, bike_id, event_type, event_time, station, duration_s, firmware, "
                         "metadata)::HUGEINT) FROM trips")
                 .at(0);
  return TableDigest{std::stoull(row[0]), std::stoull(row[1]), row[2]};
}

void expect_same_as_unkilled_run(const PipelineFixture& killed, uint64_t rows, uint64_t seed) {
  const TableDigest got = trips_digest(killed.path("out.duckdb"));
  EXPECT_EQ(got.rows, rows);
  EXPECT_EQ(got.distinct_ids, rows);
  PipelineFixture calm(sample_to_duckdb_config(rows, seed));
  auto r = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, trips_digest(calm.path("out.duckdb")));
}

}  // namespace skippr::test
