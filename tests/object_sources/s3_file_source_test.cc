// The File source on S3 (moto_server): gzip'd JSON-lines objects with malformed lines -> DuckDB under outside
// SIGKILLs lands every good line once with the content DuckDB's own read_json sees in the inputs, every malformed
// line once in the dead letters (named by its s3:// URL), picks up objects added later, and refuses an object that
// was replaced after it was read instead of skipping its new content.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/duckdb_probe.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"
#include "support/remote_files_checks.h"

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

RemoteInbox s3_inbox(const std::string& bucket) {
  auto& moto = SharedMoto();
  return {fmt::format("s3://{}/in/", bucket),
          [&moto, bucket](const std::filesystem::path& dir) { moto.upload(dir, bucket, "in/"); }, moto.env(), ""};
}

TEST(S3FileSource, HundredGzipObjectsUnderKillsLandEveryGoodLineOnceAndEveryBadLineInTheDeadLetters) {
  SharedMoto().reset_gate_stats();
  expect_every_line_once_under_kills(s3_inbox(SharedMoto().create_bucket("inbox")), 100, 10, 1700);
  SharedMoto().expect_every_request_accepted();
}

// More objects than one ListObjectsV2 page holds (1,000): the second page's request carries a continuation-token,
// which SigV4 signs in sorted order (libcurl 7.88 signs the query as written). Through the gate that checks
// signatures as AWS does, under SIGKILLs: every request accepted, every line once.
TEST(S3FileSource, FifteenHundredObjectsListedOverPagesAreSignedRightAndLandOnceUnderKills) {
  SharedMoto().reset_gate_stats();
  expect_every_line_once_under_kills(s3_inbox(SharedMoto().create_bucket("pages")), 1500, 4, 1900, /*max_lines=*/12);
  SharedMoto().expect_every_request_accepted();
}

// Objects added later are picked up; an object replaced after it was read is an error naming it (exit 1), not a
// silent skip of its new content, and a rerun keeps refusing until it is dealt with.
TEST(S3FileSource, NewObjectsArePickedUpAndAReplacedObjectIsAnErrorNamingIt) {
  expect_new_objects_read_and_replaced_ones_refused(s3_inbox(SharedMoto().create_bucket("replace")));
}

// Keys with a space, a plus, a percent sign and non-ASCII letters are listed URL-encoded (encoding-type=url) and read
// under their real names; the dead letter of a bad line names the real key.
TEST(S3FileSource, KeysWithSpacesPercentSignsAndUnicodeAreReadUnderTheirRealNames) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("names");
  TempDir input;
  write_text(input / "a b.jsonl", "{\"id\":1}\n");
  write_text(input / "100%.jsonl", "{\"id\":2}\nnot json\n");
  write_text(input / "\xc3\xa9t\xc3\xa9.jsonl", "{\"id\":3}\n");
  moto.upload(input.path(), bucket, "in/");
  PipelineFixture f(s3_files_to_duckdb_config(fmt::format("s3://{}/in/*.jsonl", bucket)));
  auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, moto.env(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(duckdb_value(f.path("out.duckdb"), "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM events"), "1,2,3");
  EXPECT_NE(
      read_text(f.path("data/pipelines/files/deadletter.jsonl")).find(fmt::format("s3://{}/in/100%.jsonl", bucket)),
      std::string::npos);
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
    PipelineFixture f(s3_files_to_duckdb_config("ftp://bucket/in/*.jsonl"));
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
