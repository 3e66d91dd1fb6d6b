// Test support: a temp folder with a skippr.yml, a DATA_DIR and a way to run skipprd against them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "support/duckdb_probe.h"
#include "support/process.h"

namespace skippr::test {

class PipelineFixture {
 public:
  explicit PipelineFixture(const std::string& config_yaml) { write_text(dir_ / "skippr.yml", config_yaml); }

  // Runs skipprd with `args`, in the temp folder, DATA_DIR=<temp>/data plus `env`.
  ProcessResult skipprd(const std::vector<std::string>& args, std::map<std::string, std::string> env = {},
                        double timeout_seconds = 600) const {
    std::vector<std::string> argv = {SKIPPRD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    env.emplace("DATA_DIR", (dir_ / "data").string());
    env.emplace("SKIPPR_CONFIG_FILE", "");
    return run_process(argv, dir_.path(), env, timeout_seconds);
  }

  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  const std::filesystem::path& root() const { return dir_.path(); }

 private:
  TempDir dir_;
};

// A config with the Sample source (rows, seed) into `sink` (one YAML flow line, e.g. "Stdout: {}"), pipeline
// "bikehire".
std::string sample_to_sink_config(const std::string& sink, uint64_t rows, uint64_t seed = 1);
// A config with a File source of JSON lines at `path_glob` (source "files") into `sink` (one YAML flow line, sink
// "warehouse"), pipeline `pipeline`.
std::string jsonl_files_to_sink_config(const std::string& path_glob, const std::string& sink,
                                       const std::string& pipeline = "bikehire");
// A config with the Sample source (rows, seed) into DuckDB file out.duckdb, table trips, pipeline "bikehire".
std::string sample_to_duckdb_config(uint64_t rows, uint64_t seed = 1, const std::string& db = "out.duckdb");

// count(*), count(DISTINCT trip_id) and an order-independent hash over every column of the trips table.
struct TableDigest {
  uint64_t rows = 0;
  uint64_t distinct_ids = 0;
  std::string hash;
  bool operator==(const TableDigest&) const = default;
};
TableDigest trips_digest(const std::filesystem::path& db);

// The trips table `killed` landed in out.duckdb holds `rows` rows, each once, and equals what a run of the same
// Sample (rows, seed) into DuckDB that was never killed lands.
void expect_same_as_unkilled_run(const PipelineFixture& killed, uint64_t rows, uint64_t seed);

}  // namespace skippr::test
