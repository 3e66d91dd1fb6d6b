// SkipprLake leaves no data file behind that no snapshot names: a landing that fails removes what it wrote (each
// retry used to add its files: 126 after a minute of retries), and the files of landings killed before their commit
// are swept once their batches have landed in other files. Files that may still be committed (a batch the table
// does not hold yet) and files skipprd did not name stay.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>

#include "core/failpoint.h"
#include "support/chaos_loop.h"
#include "support/iceberg_reader.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::string lake_config(const PipelineFixture& f, const std::string& more) {
  return jsonl_files_to_sink_config(
      f.path("in").string() + "/*.jsonl",
      fmt::format("SkipprLake: {{ path: \"{}\", table: t{} }}", f.path("lake").string(), more), "p");
}

std::map<std::string, std::string> small_batches() {
  return {{"BUFFER_THRESHOLD_BYTES", "2000"}, {"LANDING_GROUP_BATCHES", "1"}, {"SINK_RETRY_SECONDS", "3"}};
}

// Every file under the table's data/, relative to it.
std::set<std::string> data_files(const std::filesystem::path& table) {
  std::set<std::string> out;
  if (!std::filesystem::exists(table / "data")) return out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(table / "data")) {
    if (entry.is_regular_file()) out.insert(entry.path().lexically_relative(table).string());
  }
  return out;
}

uint64_t snapshot_data_files(const std::filesystem::path& table) {
  const auto metadata = iceberg_current_metadata(table);
  for (const auto& s : metadata["snapshots"]) {
    if (s["snapshot-id"] == metadata["current-snapshot-id"]) {
      return std::stoull(s["summary"]["total-data-files"].get<std::string>());
    }
  }
  return 0;
}

TEST(SkipprLakeFiles, AFailedLandingRemovesTheFilesItWrote) {
  PipelineFixture f("");
  write_text(f.path("skippr.yml"), lake_config(f, ", partition_by: [k]"));
  write_text(f.path("in/a.jsonl"), "{\"id\":1,\"k\":\"a\"}\n{\"id\":2,\"k\":\"b\"}\n");
  // A file where the k=b folder goes: the batch's k=a file is written, then its k=b file cannot be, every retry.
  write_text(f.path("lake/t/data/k=b"), "in the way");
  auto failed = f.skipprd({"sync", "--pipeline", "p", "--once"}, small_batches());
  ASSERT_EQ(failed.exit_code, 75) << failed.err;
  EXPECT_NE(failed.err.find("k=b"), std::string::npos) << failed.err;
  EXPECT_EQ(data_files(f.path("lake/t")), (std::set<std::string>{"data/k=b"})) << "a retry left its files behind";

  std::filesystem::remove(f.path("lake/t/data/k=b"));
  auto landed = f.skipprd({"sync", "--pipeline", "p", "--once"}, small_batches());
  ASSERT_EQ(landed.exit_code, 0) << landed.err;
  EXPECT_EQ(data_files(f.path("lake/t")).size(), 2u);
  EXPECT_EQ(snapshot_data_files(f.path("lake/t")), 2u);
  EXPECT_EQ(icebird_digest({"file://" + f.path("lake/t").string()}, "id").rows, 2u);
}

TEST(SkipprLakeFiles, TheFilesOfKilledLandingsAreSweptOnceTheirBatchesLanded) {
  PipelineFixture f("");
  write_text(f.path("skippr.yml"), lake_config(f, ""));
  std::string text;
  for (int i = 0; i < 200; ++i) text += fmt::format("{{\"id\":{},\"v\":\"row {}\"}}\n", i, i);
  write_text(f.path("in/a.jsonl"), text);
  // Killed three times after the first batch's files were written, before its commit.
  for (int kill = 0; kill < 3; ++kill) {
    auto killed = f.skipprd({"sync", "--pipeline", "p", "--once"},
                            armed_at(small_batches(), std::string(failpoint::kSinkInTransaction), 1));
    ASSERT_EQ(killed.exit_code, 137) << killed.err;
  }
  const auto table = f.path("lake/t");
  ASSERT_EQ(data_files(table).size(), 3u) << "each kill should leave the first batch's file";
  // Files that may still be committed, or that skipprd did not name, stay: a batch of a lineage the table does not
  // hold (another writer's, in flight) and another engine's file.
  const std::string in_flight = "data/p-000001-0123456789abcdef0123456789abcdef-00000000000000000001-0badf00d.parquet";
  write_text(table / in_flight, "not committed yet");
  write_text(table / "data/00000-1-another-engine.parquet", "another engine's");

  auto landed = f.skipprd({"sync", "--pipeline", "p", "--once", "--log"}, small_batches());
  ASSERT_EQ(landed.exit_code, 0) << landed.err;
  EXPECT_NE(landed.err.find("removed 3 data file(s)"), std::string::npos) << landed.err;
  const auto files = data_files(table);
  EXPECT_EQ(files.size(), snapshot_data_files(table) + 2) << "files no snapshot names are left";
  EXPECT_TRUE(files.contains(in_flight));
  EXPECT_TRUE(files.contains("data/00000-1-another-engine.parquet"));
  const IcebergDigest read = icebird_digest({"file://" + table.string()}, "id");
  EXPECT_EQ(read.rows, 200u);
  EXPECT_EQ(read.distinct_keys, 200u);
}

}  // namespace
}  // namespace skippr::test
