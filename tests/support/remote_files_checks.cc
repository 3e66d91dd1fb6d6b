#include "support/remote_files_checks.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/jsonl_data.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::string files_to_duckdb_config(const RemoteInbox& inbox, const std::string& pattern) {
  return fmt::format(R"(data_sources:
  inbox:
    File: {{ path: "{}{}"{} }}
data_sinks:
  warehouse:
    DuckDB: {{ path: out.duckdb, table: events }}
pipelines:
  files:
    data_source: data_sources.inbox
    data_sink: data_sinks.warehouse
)",
                     inbox.url, pattern, inbox.more_params);
}

// (file, line) of every dead letter; a duplicate fails the test.
std::set<std::pair<std::string, uint64_t>> read_dead_letters(const std::filesystem::path& file, uint64_t& lines) {
  std::set<std::pair<std::string, uint64_t>> found;
  std::ifstream in(file);
  lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    auto j = nlohmann::json::parse(line);
    auto key = std::make_pair(j.at("file").get<std::string>(), j.at("line").get<uint64_t>());
    EXPECT_TRUE(found.insert(key).second) << "dead letter written twice: " << line;
  }
  return found;
}

std::string ids(const PipelineFixture& f) {
  return duckdb_value(f.path("out.duckdb"), "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM events");
}

}  // namespace

void expect_every_line_once_under_kills(const RemoteInbox& inbox, int files, int min_kills, int seed_base,
                                        uint64_t max_lines) {
  PipelineFixture f(files_to_duckdb_config(inbox, "**/*.jsonl.gz"));
  TempDir input;
  JsonlDataSpec spec;
  spec.files = files;
  spec.evolved_from = files * 7 / 10;
  spec.big_file_bytes = max_lines > 0 ? 1ull << 20 : 4ull << 20;
  spec.max_lines = max_lines;
  if (max_lines > 0) spec.bad_every = 7;
  const JsonlData data = write_jsonl_data(input.path(), spec);
  inbox.upload(input / "in");

  std::map<std::string, std::string> env = inbox.env;
  // Small batches and WAL files: many passes through every failpoint, so kills come from the failpoints (each armed
  // for its 1st to 6th pass) as much as from the timer, on a fast idle machine as on a loaded one. The timer's window
  // leaves a run time to list, download its object and decompress up to the offset even when the machine is busy.
  env["BUFFER_THRESHOLD_BYTES"] = "50000";
  env["WAL_BYTES_PER_FILE"] = "500000";
  env["SKIPPR_CHAOS_MIN_SECONDS"] = max_lines > 0 ? "1.0" : "0.2";  // many objects: a run lists them all first
  env["SKIPPR_CHAOS_MAX_SECONDS"] = max_lines > 0 ? "4.0" : "1.2";
  const ChaosRuns runs = sync_until_done_under_chaos(f, "files", env, seed_base, {.min_kills = min_kills});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, min_kills) << runs.summary();

  const std::string got = duckdb_value(f.path("out.duckdb"), digest_sql("events"));
  const std::string want = duckdb_memory_value(digest_sql(expected_relation(data.expected)));
  const std::string good = std::to_string(data.good_lines);
  EXPECT_TRUE(got.starts_with(good + "|" + good + "|")) << "rows|distinct ids|hash: " << got << " want " << want;
  EXPECT_EQ(got, want) << "content differs from DuckDB's own reading of the input";

  // Each malformed line is one dead letter, named by its object's URL.
  std::set<std::pair<std::string, uint64_t>> want_dead;
  for (const auto& [path, line] : data.bad) {
    const auto relative = std::filesystem::path(path).lexically_relative(input / "in").generic_string();
    want_dead.insert({inbox.url + relative, line});
  }
  uint64_t dead_lines = 0;
  auto dead = read_dead_letters(f.path("data/pipelines/files/deadletter.jsonl"), dead_lines);
  EXPECT_EQ(dead_lines, data.bad.size());
  EXPECT_EQ(dead, want_dead) << "the dead letters are not exactly the malformed lines";
  // Nothing stays in the download cache once every object is read.
  std::error_code ec;
  const auto cache = f.path("data/pipelines/files/file-cache");
  EXPECT_TRUE(!std::filesystem::exists(cache, ec) || std::filesystem::is_empty(cache, ec));
  std::printf("[ metrics  ] %s objects=%d good=%llu bad=%zu %s\n", inbox.url.c_str(), files,
              static_cast<unsigned long long>(data.good_lines), data.bad.size(), runs.summary().c_str());
}

void expect_new_objects_read_and_replaced_ones_refused(const RemoteInbox& inbox) {
  PipelineFixture f(files_to_duckdb_config(inbox, "*.jsonl*"));
  TempDir input;
  write_text(input / "a.jsonl", "{\"id\":1}\n{\"id\":2}\n");
  write_text(input / "b.jsonl", "{\"id\":3}\n");
  inbox.upload(input.path());
  auto first = f.skipprd({"sync", "--pipeline", "files", "--once"}, inbox.env, 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(ids(f), "1,2,3");

  TempDir later;
  write_text(later / "c.jsonl", "{\"id\":4}\n");
  inbox.upload(later.path());
  auto second = f.skipprd({"sync", "--pipeline", "files", "--once"}, inbox.env, 120);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(ids(f), "1,2,3,4");

  TempDir replaced;
  write_text(replaced / "b.jsonl", "{\"id\":30}\n{\"id\":31}\n");
  inbox.upload(replaced.path());
  for (int run = 0; run < 2; ++run) {  // and it keeps refusing: nothing is marked read
    auto third = f.skipprd({"sync", "--pipeline", "files", "--once"}, inbox.env, 120);
    EXPECT_EQ(third.exit_code, 1) << third.err;
    EXPECT_NE(third.err.find(inbox.url + "b.jsonl was replaced after it was read"), std::string::npos) << third.err;
  }
  EXPECT_EQ(ids(f), "1,2,3,4");
}

}  // namespace skippr::test
