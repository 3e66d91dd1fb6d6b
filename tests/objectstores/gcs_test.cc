// The GCS sink against the GCS emulator (tests/support/gcs_emulator.py: the JSON API
// subset skipprd calls, with a token endpoint that checks the JWT's signature). Sample -> GCS under chaos kills lands
// every row once with the content of an unkilled run, on media and on resumable uploads; a replayed batch never
// rewrites its object; an upload whose answer is lost is retried and lands once; what no retry can fix is exit 2
// without a secret anywhere. (The File source on gs:// is tested in tests/object_sources.)
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include "clients/gcs/gcs_client.h"
#include "clients/google/google_credentials.h"
#include "clients/http/http_request.h"
#include "core/connector.h"
#include "sinks/gcs/gcs_sink.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/gcs_emulator.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

std::string sample_to_gcs_config(uint64_t rows, const std::string& bucket, const std::string& prefix,
                                 const std::string& more = "", const std::string& format = "parquet") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 7 }}
data_sinks:
  lake:
    GCS: {{ bucket: {}, prefix: {}, format: {}{} }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)",
                     rows, bucket, prefix, format, more);
}

constexpr const char* kTripColumns =
    "trip_id, rider_id, bike_id, event_type, event_time, station, duration_s, firmware, metadata::VARCHAR";

// count, distinct ids and an order-independent hash of every column of the objects in `dir`.
std::string jsonl_digest(const std::filesystem::path& dir) {
  return duckdb_memory_value(
      fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || sum(hash({})"
                  "::HUGEINT) FROM read_json('{}/**/*.jsonl', format='newline_delimited')",
                  kTripColumns, dir.string()));
}

// No secret (a line of either private key, a token the emulator issued) in what skipprd printed or wrote.
void expect_no_secret(const ProcessResult& r, const PipelineFixture& f) {
  for (const auto& secret : SharedGcs().secrets()) {
    EXPECT_EQ(r.out.find(secret), std::string::npos) << "a secret in stdout";
    EXPECT_EQ(r.err.find(secret), std::string::npos) << "a secret in stderr";
    EXPECT_TRUE(files_containing(f.path("data"), secret).empty()) << "a secret in DATA_DIR";
  }
}

// Runs `config` unkilled into prefix "unkilled" and under chaos into "killed"; returns (killed, unkilled) digests.
struct ChaosOutcome {
  std::string killed, unkilled;
  size_t objects = 0;
  ChaosRuns runs;
  double seconds = 0;
};
// `batch_bytes`: small batches make many passes through every failpoint, so kills strike often on any machine.
ChaosOutcome run_with_and_without_kills(const std::string& bucket, uint64_t rows, const std::string& more,
                                        const std::string& format, int seed,
                                        const std::string& batch_bytes = "128KiB") {
  auto& gcs = SharedGcs();
  auto env = gcs.env();
  env["BUFFER_THRESHOLD_BYTES"] = batch_bytes;
  env["WAL_BYTES_PER_FILE"] = "500000";
  PipelineFixture unkilled(sample_to_gcs_config(rows, bucket, "unkilled", more, format));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  EXPECT_EQ(clean.exit_code, 0) << clean.err;

  PipelineFixture f(sample_to_gcs_config(rows, bucket, "killed", more, format));
  // The emulator on loopback lands a run's batches within a second or two: kills come soon enough to hit it often.
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.2";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.8";
  ChaosOutcome out;
  const auto started = std::chrono::steady_clock::now();
  out.runs = sync_until_done_under_chaos(f, "bikehire", env, seed, {.min_kills = 10});
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_TRUE(out.runs.finished) << out.runs.failure;
  EXPECT_GE(out.runs.kills, 10) << out.runs.summary();

  TempDir killed_dir, unkilled_dir;
  const auto names = gcs.download(bucket, "killed/", killed_dir.path());
  gcs.download(bucket, "unkilled/", unkilled_dir.path());
  out.objects = names.size();
  // Only whole objects under batch names: a killed upload (media or resumable) is never visible.
  const std::regex name(fmt::format(R"(killed/bikehire-\d{{6}}-[0-9a-f]{{32}}-\d{{20}}\.{})", format));
  for (const auto& n : names) EXPECT_TRUE(std::regex_match(n, name)) << n;
  auto digest = format == "parquet" ? parquet_digest : jsonl_digest;
  out.unkilled = digest(unkilled_dir.path());
  out.killed = digest(killed_dir.path());
  return out;
}

// Every batch (~1 MiB of JSON lines) is a resumable upload of 256 KiB chunks, so kills land between the session's
// start, its chunks and the last one; none of that is ever visible as an object.
TEST(GcsSink, ResumableUploadsUnderKillsLandEveryRowOnce) {
  auto& gcs = SharedGcs();
  constexpr uint64_t kRows = 400000;
  const auto before = gcs.stats();
  const auto out = run_with_and_without_kills(gcs.create_bucket("resumable"), kRows,
                                              ", resumable_threshold_bytes: 262144, resumable_chunk_bytes: 262144",
                                              "jsonl", 2500, "320KiB");
  const auto after = gcs.stats();
  EXPECT_EQ(out.unkilled.substr(0, out.unkilled.find(' ', out.unkilled.find(' ') + 1)),
            fmt::format("{} {}", kRows, kRows));
  EXPECT_EQ(out.killed, out.unkilled);
  const int sessions = after["resumable_sessions"].get<int>() - before["resumable_sessions"].get<int>();
  const int chunks = after["chunks"].get<int>() - before["chunks"].get<int>();
  EXPECT_GE(sessions, static_cast<int>(out.objects)) << "every object goes through a resumable session";
  EXPECT_GE(chunks, 3 * sessions / 2) << "objects are several chunks";
  std::printf("[ metrics  ] rows=%llu objects=%zu sessions=%d chunks=%d chaos_seconds=%.1f %s\n",
              static_cast<unsigned long long>(kRows), out.objects, sessions, chunks, out.seconds,
              out.runs.summary().c_str());
}

// A batch written again under the same id (a replay after a crash) finds its object and leaves it as it is, even if
// the bytes would differ: 412 is "already landed", and the generation is the first write's.
TEST(GcsSink, AReplayedBatchNeverRewritesItsObject) {
  auto& gcs = SharedGcs();
  const std::string bucket = gcs.create_bucket("replay");
  for (const bool resumable : {false, true}) {
    ConnectorContext ctx;
    ctx.name = "lake";
    ctx.pipeline = "p";
    ctx.params = {{"bucket", bucket},
                  {"prefix", resumable ? "r" : "m"},
                  {"format", "jsonl"},
                  {"compression", "auto"},
                  {"credentials_file", gcs.credentials_file().string()},
                  {"endpoint", gcs.endpoint()}};
    if (resumable) ctx.params["resumable_threshold_bytes"] = 1;
    auto sink = gcs_sink_spec().make_sink(ctx);
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
    const std::string name =
        fmt::format("{}/p-000001-0123456789abcdef0123456789abcdef-00000000000000000001.jsonl", resumable ? "r" : "m");
    const std::string generation = gcs.generation(bucket, name);
    auto again = (*sink)->write(batch_of("second"), id);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, WriteOutcome::kAlreadyApplied);
    EXPECT_EQ(gcs.names(bucket, resumable ? "r/" : "m/"), std::vector<std::string>{name});
    EXPECT_EQ(gcs.get(bucket, name), "{\"v\":\"first\"}\n");
    EXPECT_EQ(gcs.generation(bucket, name), generation);
  }
}

// The emulator stores an upload and closes the connection without answering: skipprd cannot know whether it landed
// (an unknown outcome), retries the same name, meets 412 and goes on. Every row is there once, on either path.
TEST(GcsSink, AnUploadWhoseAnswerIsLostIsRetriedAndLandsOnce) {
  auto& gcs = SharedGcs();
  const std::string bucket = gcs.create_bucket("lost");
  for (const std::string path : {"media", "resumable"}) {
    const std::string more =
        path == "resumable" ? ", resumable_threshold_bytes: 262144, resumable_chunk_bytes: 262144" : "";
    PipelineFixture f(sample_to_gcs_config(40000, bucket, path, more, "jsonl"));
    auto env = gcs.env();
    env["BUFFER_THRESHOLD_BYTES"] = "1MiB";
    const auto before = gcs.stats();
    gcs.drop_after_insert(3);
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
    gcs.drop_after_insert(0);
    const auto after = gcs.stats();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(after["dropped"].get<int>() - before["dropped"].get<int>(), 1) << path;
    auto delta = [&](const char* key) { return after[key].get<int>() - before[key].get<int>(); };
    TempDir dir;
    const auto names = gcs.download(bucket, path + "/", dir.path());
    EXPECT_GE(names.size(), 3u);
    // Each object was made visible once: the retry of the lost one met it (412 on a media upload; the metadata
    // check before a resumable session) instead of writing it again.
    EXPECT_EQ(delta("uploads") - delta("precondition_failed"), static_cast<int>(names.size())) << path;
    if (path == "media") {
      EXPECT_EQ(delta("precondition_failed"), 1);
    } else {
      EXPECT_EQ(delta("resumable_sessions"), static_cast<int>(names.size()));
    }
    EXPECT_EQ(duckdb_memory_value(fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) FROM "
                                              "read_json('{}/**/*.jsonl', format='newline_delimited')",
                                              dir.path().string())),
              "40000 40000")
        << path;
  }
}

// What waiting cannot fix is exit 2 with one sentence, before anything is read or committed, and without a private
// key or token anywhere: a missing bucket, a key the token endpoint does not know, no credentials. An endpoint
// nobody answers on is retried, then exit 75.
TEST(GcsSink, BadCredentialsAndAMissingBucketAreConfigErrorsAndADownServerIsRetryLater) {
  auto& gcs = SharedGcs();
  const std::string bucket = gcs.create_bucket("bad");
  auto one_sentence = [](const std::string& err) {
    return std::count(err.begin(), err.end(), '\n') <= 1 ? ::testing::AssertionSuccess()
                                                         : ::testing::AssertionFailure() << err;
  };
  {
    PipelineFixture f(sample_to_gcs_config(100, "no-such-bucket", "p"));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, gcs.env(), 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the bucket does not exist"), std::string::npos) << r.err;
    EXPECT_TRUE(one_sentence(r.err));
    expect_no_secret(r, f);
  }
  {
    const int refused = gcs.stats()["tokens_refused"].get<int>();
    PipelineFixture f(sample_to_gcs_config(
        100, bucket, "p", fmt::format(", credentials_file: \"{}\"", gcs.other_key_credentials_file().string())));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, gcs.env(), 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("invalid_grant: the service-account key is refused"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(gcs.other_key_credentials_file().string()), std::string::npos) << "names the key file";
    EXPECT_TRUE(one_sentence(r.err));
    EXPECT_EQ(r.out.find("committed"), std::string::npos) << "the sink is checked before anything is read";
    EXPECT_GT(gcs.stats()["tokens_refused"].get<int>(), refused);
    expect_no_secret(r, f);
  }
  {
    PipelineFixture f(sample_to_gcs_config(100, bucket, "p"));
    auto env = gcs.env();
    env["GOOGLE_APPLICATION_CREDENTIALS"] = "";
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("no GCS credentials"), std::string::npos) << r.err;
    EXPECT_TRUE(one_sentence(r.err));
  }
  {
    // The token endpoint answers (the key file's token_uri), the storage endpoint does not.
    PipelineFixture f(sample_to_gcs_config(100, bucket, "p",
                                           fmt::format(", endpoint: \"http://127.0.0.1:{}\"", free_loopback_port())));
    auto env = gcs.env();
    env["SINK_RETRY_SECONDS"] = "2";
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 75) << r.err;
    expect_no_secret(r, f);
  }
  EXPECT_TRUE(gcs.names(bucket).empty());
}

// Without a server: the endpoint as Google's SDKs read STORAGE_EMULATOR_HOST (host:port is plain http), and key files
// that are not service-account keys refused in a sentence that quotes nothing of them.
TEST(GcsCredentials, EndpointsAndKeyFilesResolveWithoutQuotingTheKey) {
  GcsOptions o;
  setenv("STORAGE_EMULATOR_HOST", "localhost:4443", 1);
  EXPECT_EQ(resolve_gcs_endpoint(o, "sink").value(), "http://localhost:4443");
  unsetenv("STORAGE_EMULATOR_HOST");
  EXPECT_EQ(resolve_gcs_endpoint(o, "sink").value(), "https://storage.googleapis.com");
  o.endpoint = "https://example.test:8443/";
  EXPECT_EQ(resolve_gcs_endpoint(o, "sink").value(), "https://example.test:8443");

  TempDir dir;
  const std::string secret = "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n";
  write_text(dir / "user.json", nlohmann::json{{"type", "authorized_user"}, {"refresh_token", secret}}.dump());
  write_text(dir / "broken.json", "{\"type\": \"service_account\", \"private_key\": \"" + secret.substr(0, 20));
  write_text(dir / "bad-pem.json", nlohmann::json{{"type", "service_account"},
                                                  {"client_email", "a@b"},
                                                  {"private_key", secret},
                                                  {"token_uri", "http://127.0.0.1:1/token"}}
                                       .dump());
  for (const char* name : {"user.json", "broken.json", "missing.json"}) {
    o.credentials_file = (dir / name).string();
    auto account = load_google_service_account(o, "sink");
    ASSERT_FALSE(account) << name;
    EXPECT_EQ(account.error().kind, ErrorKind::kConfig);
    EXPECT_EQ(account.error().message.find("TOPSECRET"), std::string::npos) << account.error().message;
    EXPECT_NE(account.error().message.find(o.credentials_file), std::string::npos) << account.error().message;
  }
  o.credentials_file = (dir / "bad-pem.json").string();
  auto account = load_google_service_account(o, "sink");
  ASSERT_TRUE(account) << account.error().message;
  auto jwt = google_jwt_assertion(*account, kGcsScope, 1700000000);
  ASSERT_FALSE(jwt);
  EXPECT_EQ(jwt.error().kind, ErrorKind::kConfig);
  EXPECT_NE(jwt.error().message.find("is not a PEM RSA key"), std::string::npos) << jwt.error().message;
  EXPECT_EQ(jwt.error().message.find("TOPSECRET"), std::string::npos);
}

// The emulator takes no storage call without a token it issued (so every run above proves skipprd's JWT was
// signed right), and the client keeps its token until a minute before it expires, then fetches a new one.
TEST(GcsCredentials, TokensAreCheckedCachedAndRenewedBeforeTheyExpire) {
  GcsEmulator gcs(/*token_ttl_seconds=*/66);  // cached for six seconds: a loaded machine's calls fit in them
  const std::string bucket = gcs.create_bucket("tokens");
  for (const std::string header : {"", "Authorization: Bearer ya29.not-issued-here"}) {
    HttpRequest r;
    r.url = fmt::format("{}/storage/v1/b/{}", gcs.endpoint(), bucket);
    if (!header.empty()) r.headers.push_back(header);
    auto response = http_send(r);
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->status, 401) << header;
  }
  GcsOptions o;
  o.credentials_file = gcs.credentials_file().string();
  o.endpoint = gcs.endpoint();
  GcsClient client(o.endpoint, load_google_service_account(o, "test").value());
  ASSERT_TRUE(client.check_bucket(bucket));
  ASSERT_TRUE(client.list_objects(bucket, "").has_value());
  EXPECT_EQ(gcs.stats()["tokens_issued"], 1) << "the token is reused";
  std::this_thread::sleep_for(std::chrono::milliseconds(6500));
  ASSERT_TRUE(client.check_bucket(bucket));
  EXPECT_EQ(gcs.stats()["tokens_issued"], 2) << "a token within a minute of expiry is replaced";
  EXPECT_EQ(gcs.stats()["unauthorized"], 2) << "only the two calls without a valid token were refused";
}

}  // namespace
}  // namespace skippr::test
