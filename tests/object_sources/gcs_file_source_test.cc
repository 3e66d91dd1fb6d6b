// The File source on gs:// against the GCS emulator (tests/support/gcs_emulator.py): gzip'd JSON lines under kills
// land exactly, objects added later are read, a replaced object is refused by name, and what no retry can fix is
// exit 2 before anything is read.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/gcs_emulator.h"
#include "support/pipeline_fixture.h"
#include "support/remote_files_checks.h"

namespace skippr::test {
namespace {

std::string gcs_files_to_duckdb_config(const std::string& path, const std::string& more = "") {
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

RemoteInbox gcs_inbox(const std::string& bucket, bool by_params = false) {
  auto& gcs = SharedGcs();
  RemoteInbox inbox{fmt::format("gs://{}/in/", bucket),
                    [&gcs, bucket](const std::filesystem::path& dir) { gcs.upload(dir, bucket, "in/"); }, gcs.env(),
                    ""};
  if (by_params) {  // the key file and endpoint from the source's parameters, none from the environment
    inbox.env = {{"GOOGLE_APPLICATION_CREDENTIALS", ""}, {"STORAGE_EMULATOR_HOST", ""}};
    inbox.more_params =
        fmt::format(", credentials_file: \"{}\", endpoint: \"{}\"", gcs.credentials_file().string(), gcs.endpoint());
  }
  return inbox;
}

// 60 gzip'd JSON-lines objects (one large, some lines malformed, the later ones with more fields) beside 60 that do
// not match, so the listing takes pages (50 a page) and must follow nextPageToken; the key file and endpoint come
// from the source's parameters. The shared check: every good line once under kills, every malformed line one dead
// letter named by its gs:// URL.
TEST(GcsFileSource, GzipObjectsUnderKillsLandEveryGoodLineOnceAndEveryBadLineInTheDeadLetters) {
  auto& gcs = SharedGcs();
  const std::string bucket = gcs.create_bucket("inbox");
  for (int i = 0; i < 60; ++i) gcs.put(bucket, fmt::format("in/zz-ignored-{:02d}.txt", i), "not data\n");
  expect_every_line_once_under_kills(gcs_inbox(bucket, /*by_params=*/true), 60, 10, 2900);
  EXPECT_EQ(gcs.names(bucket, "in/").size(), 120u);
}

// Objects added later are picked up; an object replaced after it was read (a new generation) is an error naming it
// (exit 1), not a silent skip of its new content, and a rerun keeps refusing.
TEST(GcsFileSource, NewObjectsArePickedUpAndAReplacedObjectIsAnErrorNamingIt) {
  expect_new_objects_read_and_replaced_ones_refused(gcs_inbox(SharedGcs().create_bucket("replace")));
}

// What waiting cannot fix stops before anything is read, exit 2: a missing bucket, a URL without one, no
// credentials. A storage endpoint nobody answers on is retried, then exit 75.
TEST(GcsFileSource, MissingBucketAndBadUrlsAreConfigErrorsAndADownServerIsRetryLater) {
  auto& gcs = SharedGcs();
  {
    PipelineFixture f(gcs_files_to_duckdb_config("gs://no-such-bucket/in/*.jsonl"));
    auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, gcs.env(), 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the bucket does not exist"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
  }
  {
    PipelineFixture f(gcs_files_to_duckdb_config("gs:///in/*.jsonl"));
    auto r = f.skipprd({"validate"}, gcs.env(), 60);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("must be gs://<bucket>/<key or pattern>"), std::string::npos) << r.err;
  }
  {
    PipelineFixture f(gcs_files_to_duckdb_config("gs://bucket/in/*.jsonl"));
    auto env = gcs.env();
    env["GOOGLE_APPLICATION_CREDENTIALS"] = "";
    auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("no GCS credentials"), std::string::npos) << r.err;
  }
  {
    auto env = gcs.env();
    env["STORAGE_EMULATOR_HOST"] = fmt::format("127.0.0.1:{}", free_loopback_port());
    PipelineFixture f(gcs_files_to_duckdb_config("gs://bucket/in/*.jsonl"));
    auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 75) << r.err;
  }
}

}  // namespace
}  // namespace skippr::test
