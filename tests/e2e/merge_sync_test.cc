// merge_by_key into DuckDB through the real binary: Sample rows keyed on trip_id land once however often the
// pipeline runs (a rerun, a RESET that reads everything again), and a bad merge configuration exits 2 before
// anything is committed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::string sample_to_duckdb_merge_config(uint64_t rows, const std::string& primary_key = "trip_id") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 3 }}
data_sinks:
  warehouse:
    DuckDB: {{ path: out.duckdb, table: trips }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: append
  merged:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: merge_by_key
    primary_key: [{}]
)",
                     rows, primary_key);
}

// Several batches per run, so batches of one run merge into rows of another.
const std::map<std::string, std::string> kSmallBatches = {{"BUFFER_THRESHOLD_BYTES", "400000"}};

TEST(MergeSync, SampleMergedByTripIdLandsEachTripOnceAcrossRerunsAndAReset) {
  constexpr uint64_t kRows = 30000;
  PipelineFixture f(sample_to_duckdb_merge_config(kRows));
  const auto db = f.path("out.duckdb");
  auto first = f.skipprd({"sync", "--pipeline", "merged", "--once"}, kSmallBatches);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto digest = trips_digest(db);
  EXPECT_EQ(digest.rows, kRows);
  EXPECT_EQ(digest.distinct_ids, kRows);
  const auto batches = duckdb_value(db, "SELECT count(*) FROM _skippr_batches");
  EXPECT_GT(std::stoi(batches), 3);

  // The same rows appended by another pipeline into another file: the merge stored exactly the source's content.
  PipelineFixture appended(sample_to_duckdb_merge_config(kRows));
  ASSERT_EQ(appended.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  EXPECT_EQ(digest, trips_digest(appended.path("out.duckdb")));

  // A RESET-free rerun, twice: nothing new is read, nothing lands twice.
  for (int run = 0; run < 2; ++run) {
    auto again = f.skipprd({"sync", "--pipeline", "merged", "--once"}, kSmallBatches);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(trips_digest(db), digest);
    EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM _skippr_batches"), batches);
  }

  // RESET reads every row again under a new epoch: an append table would double, the merge replaces each trip by
  // itself with the newer token.
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE merged"}).exit_code, 0);
  auto after_reset = f.skipprd({"sync", "--pipeline", "merged", "--once"}, kSmallBatches);
  ASSERT_EQ(after_reset.exit_code, 0) << after_reset.err;
  EXPECT_EQ(trips_digest(db), digest);
  // Epoch 2's tokens start at (2 << 40) << 32 = 2^73.
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM trips WHERE _skippr_order < 9444732965739290427392"), "0");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM _skippr_batches WHERE epoch = 2"), batches);
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM trips__skippr_tombstones"), "0");
}

TEST(MergeSync, ATargetWithoutTheKeyColumnExits2WithOneSentenceAndCommitsNothing) {
  PipelineFixture f(sample_to_duckdb_merge_config(2000, "ride_id"));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);  // creates trips by append
  auto r = f.skipprd({"sync", "--pipeline", "merged", "--once"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("DuckDB table \"trips\" in " + f.path("out.duckdb").string() +
                       " has no column \"ride_id\" named in the pipeline's primary_key; fix primary_key or the table"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) FROM trips"), "2000");
  // Nothing was committed: the merged pipeline's source position is still the start.
  auto show = f.skipprd({"query", "--sql", "SHOW PIPELINE merged"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto position = show.out.find("source_position");
  ASSERT_NE(position, std::string::npos) << show.out;
  const auto line = show.out.substr(position, show.out.find('\n', position) - position);
  EXPECT_TRUE(line.ends_with(" start")) << line;
}

TEST(MergeSync, MergeByKeyWithoutAPrimaryKeyExits2) {
  PipelineFixture f(R"(data_sources:
  sample:
    Sample: { rows: 10, seed: 1 }
data_sinks:
  warehouse:
    DuckDB: { path: out.duckdb, table: trips }
pipelines:
  merged:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: merge_by_key
)");
  auto r = f.skipprd({"sync", "--pipeline", "merged", "--once"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("merge_by_key needs the key to merge on; add primary_key"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
}

}  // namespace
}  // namespace skippr::test
