// The File source on S3 (moto_server): gzip'd JSON-lines objects with malformed lines -> DuckDB under outside
// SIGKILLs lands every good line once with the content DuckDB's own read_json sees in the inputs, every malformed
// line once in the dead letters (named by its s3:// URL), picks up objects added later, and refuses an object that
// was replaced after it was read instead of skipping its new content.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/jsonl_data.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::string s3_files_to_duckdb_config(const std::string& path, const std::string& more = "") {
  return fmt::format(R"(data_sources:
  inbox:
    File: {{ path: "{}"{} }}
data_sinks:
  warehouse:
    DuckDB: {{ path: out.duckdb, table: events }}
pipelines:
  files:
    data_source: data_sources.inbox
    data_sink: data_sinks.warehouse
)",
                     path, more);
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

void write_gzip_jsonl(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  const auto plain = path.parent_path() / "plain.tmp";
  write_text(plain, text);
  ASSERT_EQ(
      std::system(fmt::format("gzip -c '{}' > '{}' && rm '{}'", plain.string(), path.string(), plain.string()).c_str()),
      0);
}

TEST(S3FileSource, HundredGzipObjectsUnderKillsLandEveryGoodLineOnceAndEveryBadLineInTheDeadLetters) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("inbox");
  PipelineFixture f(s3_files_to_duckdb_config(fmt::format("s3://{}/in/**/*.jsonl.gz", bucket)));
  TempDir input;
  JsonlDataSpec spec;
  spec.files = 100;
  spec.evolved_from = 70;
  spec.big_file_bytes = 8ull << 20;
  const JsonlData data = write_jsonl_data(input.path(), spec);
  moto.upload(input / "in", bucket, "in/");
  ASSERT_EQ(moto.keys(bucket, "in/").size(), 100u);

  std::map<std::string, std::string> env = moto.env();
  env["BUFFER_THRESHOLD_BYTES"] = "200000";
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.1";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.6";
  const ChaosRuns runs = sync_until_done_under_chaos(f, "files", env, 1700, 300);
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 10) << runs.summary();

  const std::string got = duckdb_value(f.path("out.duckdb"), digest_sql("events"));
  const std::string want = duckdb_memory_value(digest_sql(expected_relation(data.expected)));
  const std::string good = std::to_string(data.good_lines);
  EXPECT_TRUE(got.starts_with(good + "|" + good + "|")) << "rows|distinct ids|hash: " << got << " want " << want;
  EXPECT_EQ(got, want) << "content differs from DuckDB's own reading of the input";

  // The dead letters name each malformed line by its object's URL, once.
  std::set<std::pair<std::string, uint64_t>> want_dead;
  for (const auto& [path, line] : data.bad) {
    const auto relative = std::filesystem::path(path).lexically_relative(input.path()).generic_string();
    want_dead.insert({fmt::format("s3://{}/{}", bucket, relative), line});
  }
  uint64_t dead_lines = 0;
  auto dead = read_dead_letters(f.path("data/pipelines/files/deadletter.jsonl"), dead_lines);
  EXPECT_EQ(dead_lines, data.bad.size());
  EXPECT_EQ(dead, want_dead) << "the dead letters are not exactly the malformed lines";
  // Nothing is left in the download cache once every object is read.
  std::error_code ec;
  const auto cache = f.path("data/pipelines/files/file-cache");
  EXPECT_TRUE(!std::filesystem::exists(cache, ec) || std::filesystem::is_empty(cache, ec));
  std::printf("[ metrics  ] objects=100 good=%llu bad=%zu %s\n", static_cast<unsigned long long>(data.good_lines),
              data.bad.size(), runs.summary().c_str());
}

// Objects added later are picked up; an object replaced after it was read is an error naming it (exit 1), not a
// silent skip of its new content, and a rerun keeps refusing until it is dealt with.
TEST(S3FileSource, NewObjectsArePickedUpAndAReplacedObjectIsAnErrorNamingIt) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("replace");
  TempDir input;
  write_gzip_jsonl(input / "a.jsonl.gz", "{\"id\":1}\n{\"id\":2}\n");
  write_text(input / "b.jsonl", "{\"id\":3}\n");
  moto.upload(input.path(), bucket, "in/");
  PipelineFixture f(s3_files_to_duckdb_config(fmt::format("s3://{}/in/*.jsonl*", bucket)));
  auto first = f.skipprd({"sync", "--pipeline", "files", "--once"}, moto.env(), 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM events"), "1,2,3");

  TempDir later;
  write_text(later / "c.jsonl", "{\"id\":4}\n");
  moto.upload(later.path(), bucket, "in/");
  auto second = f.skipprd({"sync", "--pipeline", "files", "--once"}, moto.env(), 120);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM events"),
            "1,2,3,4");

  TempDir replaced;
  write_text(replaced / "b.jsonl", "{\"id\":30}\n{\"id\":31}\n");
  moto.upload(replaced.path(), bucket, "in/");
  for (int run = 0; run < 2; ++run) {
    auto third = f.skipprd({"sync", "--pipeline", "files", "--once"}, moto.env(), 120);
    EXPECT_EQ(third.exit_code, 1) << third.err;
    EXPECT_NE(third.err.find(fmt::format("s3://{}/in/b.jsonl was replaced after it was read", bucket)),
              std::string::npos)
        << third.err;
  }
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT count(*) FROM events"), "4");
}

// A fresh DATA_DIR resumes from the destination's ledger: nothing is read twice, the objects added since are read.
TEST(S3FileSource, AFreshDataDirResumesFromTheDestination) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("fresh");
  TempDir input;
  write_text(input / "a.jsonl", "{\"id\":1}\n{\"id\":2}\n");
  moto.upload(input.path(), bucket, "in/");
  PipelineFixture f(s3_files_to_duckdb_config(fmt::format("s3://{}/in/*.jsonl", bucket)));
  ASSERT_EQ(f.skipprd({"sync", "--pipeline", "files", "--once"}, moto.env(), 120).exit_code, 0);
  std::filesystem::remove_all(f.path("data"));
  TempDir later;
  write_text(later / "b.jsonl", "{\"id\":3}\n");
  moto.upload(later.path(), bucket, "in/");
  auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, moto.env(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM events"), "1,2,3");
}

// What waiting cannot fix stops before anything is read, exit 2 with one sentence: a missing bucket, a URL without
// one. A server nobody answers on is retried, then exit 75.
TEST(S3FileSource, MissingBucketAndBadUrlsAreConfigErrorsAndADownServerIsRetryLater) {
  auto& moto = SharedMoto();
  {
    PipelineFixture f(s3_files_to_duckdb_config("s3://no-such-bucket/in/*.jsonl"));
    auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, moto.env(), 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the bucket does not exist"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
  }
  {
    PipelineFixture f(s3_files_to_duckdb_config("s3:///in/*.jsonl"));
    auto r = f.skipprd({"validate"}, moto.env(), 60);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("must be s3://<bucket>/<key or pattern>"), std::string::npos) << r.err;
  }
  {
    PipelineFixture f(s3_files_to_duckdb_config("gs://bucket/in/*.jsonl"));
    auto r = f.skipprd({"validate"}, moto.env(), 60);
    EXPECT_EQ(r.exit_code, 2) << r.err;
  }
  {
    auto env = moto.env();
    env["AWS_ENDPOINT_URL"] = fmt::format("http://127.0.0.1:{}", free_loopback_port());
    env["AWS_ENDPOINT_URL_S3"] = env["AWS_ENDPOINT_URL"];
    PipelineFixture f(s3_files_to_duckdb_config("s3://bucket/in/*.jsonl"));
    auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 75) << r.err;
  }
}

}  // namespace
}  // namespace skippr::test
