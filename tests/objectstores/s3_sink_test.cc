// The S3 sink against moto_server (a real S3 API, started once for this binary): Sample -> S3 under chaos kills
// lands every row once with the content of an unkilled run, a replayed batch never rewrites its object, and what no
// retry can fix (a missing bucket, no credentials) stops the run with exit 2 before anything is committed.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <regex>

#include "core/connector.h"
#include "sinks/s3/s3_sink.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::string sample_to_s3_config(uint64_t rows, const std::string& bucket, const std::string& prefix,
                                const std::string& more = "") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 7 }}
data_sinks:
  lake:
    S3: {{ bucket: {}, prefix: {}, format: parquet{} }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)",
                     rows, bucket, prefix, more);
}

// A batch written again under the same id (a replay after a crash) finds its object and leaves it as it is, even
// if the bytes would differ: 412 is "already landed".
TEST(S3Sink, AReplayedBatchNeverRewritesItsObject) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("replay");
  for (const auto& [k, v] : moto.env()) setenv(k.c_str(), v.c_str(), 1);
  ConnectorContext ctx;
  ctx.name = "lake";
  ctx.pipeline = "p";
  ctx.params = {{"bucket", bucket}, {"prefix", "x"}, {"format", "jsonl"}, {"compression", "auto"}};
  auto sink = s3_sink_spec().make_sink(ctx);
  ASSERT_TRUE(sink) << sink.error().message;
  ASSERT_TRUE((*sink)->open());
  auto batch_of = [](const std::string& value) {
    Batch b;
    b.add_column({"v", Type::kString});
    b.columns[0].append_string(value);
    b.rows = 1;
    return b;
  };
  const BatchId id{"p", 1, 1, "0123456789abcdef0123456789abcdef"};
  auto first = (*sink)->write(batch_of("first"), id);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, WriteOutcome::kApplied);
  auto again = (*sink)->write(batch_of("second"), id);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, WriteOutcome::kAlreadyApplied);
  TempDir dir;
  const auto keys = moto.download(bucket, "x/", dir.path());
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(read_text(dir / "p-000001-0123456789abcdef0123456789abcdef-00000000000000000001.jsonl"),
            "{\"v\":\"first\"}\n");
}

// partition_by writes Hive-style folders, one object per partition value per batch.
TEST(S3Sink, PartitionByWritesHiveFolders) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("parts");
  PipelineFixture f(sample_to_s3_config(5000, bucket, "p", ", partition_by: [event_type]"));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, moto.env(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TempDir dir;
  const auto keys = moto.download(bucket, "p/", dir.path());
  ASSERT_FALSE(keys.empty());
  for (const auto& key : keys) EXPECT_TRUE(key.starts_with("p/event_type=")) << key;
  EXPECT_EQ(
      duckdb_memory_value(fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || "
                                      "count(*) FILTER (WHERE event_type <> regexp_extract(filename, "
                                      "'event_type=([^/]+)/', 1)) FROM read_parquet('{}/**/*.parquet', filename=true)",
                                      dir.path().string())),
      "5000 5000 0");
}

// What waiting cannot fix is exit 2 with one sentence, before anything is read or committed: a missing bucket, no
// credentials anywhere. An endpoint nobody answers on is retried, then exit 75.
TEST(S3Sink, MissingBucketAndMissingCredentialsAreConfigErrorsAndADownServerIsRetryLater) {
  auto& moto = SharedMoto();
  {
    PipelineFixture f(sample_to_s3_config(100, "no-such-bucket", "p"));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, moto.env(), 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the bucket does not exist"), std::string::npos) << r.err;
  }
  {
    PipelineFixture f(sample_to_s3_config(100, moto.create_bucket("nocreds"), "p"));
    auto env = moto.env();
    env["AWS_ACCESS_KEY_ID"] = "";
    env["AWS_SECRET_ACCESS_KEY"] = "";
    env["AWS_SHARED_CREDENTIALS_FILE"] = (f.path("none")).string();
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("no AWS credentials found"), std::string::npos) << r.err;
  }
  {
    PipelineFixture f(sample_to_s3_config(100, "b", "p"));
    auto env = moto.env();
    env["AWS_ENDPOINT_URL"] = fmt::format("http://127.0.0.1:{}", free_loopback_port());
    env["SINK_RETRY_SECONDS"] = "2";
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 75) << r.err;
  }
}

// The environment for skipprd with `user`'s key instead of the shared one.
std::map<std::string, std::string> env_with_key(const MotoServer::User& user) {
  auto env = SharedMoto().env();
  env["AWS_ACCESS_KEY_ID"] = user.key_id;
  env["AWS_SECRET_ACCESS_KEY"] = user.secret;
  return env;
}

// Through the gate that checks SigV4 as AWS does, a key of its own lands the rows — the signature libcurl makes is
// the one S3 expects — and a wrong secret is exit 2 naming where the credentials came from, without the secret.
TEST(S3Sink, SignaturesAreCheckedAndAWrongSecretIsAConfigError) {
  auto& moto = SharedMoto();
  moto.reset_gate_stats();
  const auto user = moto.create_user_and_bucket();
  auto env = env_with_key(user);
  {
    PipelineFixture f(sample_to_s3_config(1000, user.bucket, "ok"));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("1000 landed"), std::string::npos) << r.out;
  }
  env["AWS_SECRET_ACCESS_KEY"] = "wr0ng-secret-value";
  PipelineFixture f(sample_to_s3_config(1000, user.bucket, "refused"));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the credentials from environment are refused"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("wr0ng-secret-value"), std::string::npos);
  EXPECT_EQ(r.out.find("committed"), std::string::npos) << "the sink is checked before anything is read";
  EXPECT_GT(moto.gate_stats().at("refused").value("SignatureDoesNotMatch", 0), 0) << "the gate refused the wrong key";
}

// A least-privilege policy without s3:ListBucket makes S3 answer 403 where a key or bucket is looked for (AWS hides
// what exists from who may not list): exit 2 before anything is read, and the message names the missing permission
// instead of only blaming the credentials.
TEST(S3Sink, APolicyWithoutListBucketIsExit2NamingThePermission) {
  auto& moto = SharedMoto();
  const auto user = moto.create_user_and_bucket(/*without_list_bucket=*/true);
  PipelineFixture f(sample_to_s3_config(1000, user.bucket, "nolist"));
  const auto env = env_with_key(user);
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("s3:ListBucket"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("committed"), std::string::npos) << "the sink is checked before anything is read";
  EXPECT_EQ(r.err.find(user.secret), std::string::npos);
}

// A batch above multipart_threshold_bytes is a multipart upload (its ETag says how many parts), and the objects
// hold every row once.
TEST(S3Sink, LargeBatchesAreMultipartUploadsOfEveryRow) {
  auto& moto = SharedMoto();
  moto.reset_gate_stats();
  const std::string bucket = moto.create_bucket("multipart");
  PipelineFixture f(fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: 200000, seed: 7 }}
data_sinks:
  lake:
    S3: {{ bucket: {}, prefix: mp, format: jsonl, multipart_threshold_bytes: 8388608, multipart_part_bytes: 5242880 }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)",
                                bucket));
  auto env = moto.env();
  env["BUFFER_THRESHOLD_BYTES"] = "16MiB";
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TempDir dir;
  const auto keys = moto.download(bucket, "mp/", dir.path());
  ASSERT_FALSE(keys.empty());
  EXPECT_TRUE(std::regex_search(moto.etag(bucket, keys.front()), std::regex(R"(-[2-9]"?$)")))
      << moto.etag(bucket, keys.front());
  EXPECT_EQ(
      duckdb_memory_value(fmt::format(
          "SELECT count(*) || ' ' || count(DISTINCT trip_id) FROM read_json('{}/*.jsonl', format='newline_delimited')",
          dir.path().string())),
      "200000 200000");
  moto.expect_every_request_accepted();  // the uploads' ?uploads= and ?partNumber=&uploadId= signed right
}

// Web identity (a token file and a role, as EKS gives a pod): the chain exchanges it at STS for temporary
// credentials (moto's STS answers AssumeRoleWithWebIdentity), and the run lands with them.
TEST(S3Sink, WebIdentityCredentialsComeFromSts) {
  auto& moto = SharedMoto();
  PipelineFixture f(sample_to_s3_config(500, moto.create_bucket("webid"), "w"));
  write_text(f.path("token"), "eyJhbGciOiJSUzI1NiJ9.test.token\n");
  auto env = moto.env();
  env["AWS_ACCESS_KEY_ID"] = "";
  env["AWS_SECRET_ACCESS_KEY"] = "";
  env["AWS_SHARED_CREDENTIALS_FILE"] = f.path("none").string();
  env["AWS_WEB_IDENTITY_TOKEN_FILE"] = f.path("token").string();
  env["AWS_ROLE_ARN"] = "arn:aws:iam::123456789012:role/skippr";
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("500 landed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace skippr::test
