// The AzureBlob sink against Azurite (the Azure Storage emulator, started once for this binary, checking Shared Key
// and SAS signatures): Sample -> AzureBlob under chaos kills lands every row once with the content of an unkilled
// run, a replayed batch never rewrites its blob, large batches are blocks plus one Put Block List, and what no retry
// can fix (a wrong key, a missing container, no credentials) stops the run with exit 2, without a secret anywhere.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <thread>

#include "clients/azure/blob_client.h"
#include "core/connector.h"
#include "sinks/azure_blob/azure_blob_sink.h"
#include "support/azurite_server.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

// The sink's credentials come from ${AZ_KEY} (or whatever `credentials` says), so the config file holds no secret.
std::string sample_to_azure_config(uint64_t rows, const std::string& endpoint, const std::string& container,
                                   const std::string& prefix, const std::string& more = "",
                                   const std::string& credentials = "account_key: \"${AZ_KEY}\", ") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 7 }}
data_sinks:
  lake:
    AzureBlob: {{ account: devstoreaccount1, container: {}, prefix: {}, format: parquet, {}endpoint: "{}"{} }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)",
                     rows, container, prefix, credentials, endpoint, more);
}

std::map<std::string, std::string> key_env() { return {{"AZ_KEY", AzuriteServer::kKey}}; }

// count, distinct ids and an order-independent hash of every column of the Parquet files in `dir`.
// No secret in what skipprd printed or in any file it wrote.
void expect_no_secret(const ProcessResult& r, const PipelineFixture& f, const std::string& secret) {
  EXPECT_EQ(r.out.find(secret), std::string::npos);
  EXPECT_EQ(r.err.find(secret), std::string::npos);
  EXPECT_TRUE(files_containing(f.path("data"), secret).empty());
}

// Blocks of 4 KiB from 8 KiB on: the batches (~1k rows, some 12 KiB of Parquet) are Put Block + Put Block List, so
// kills land between blocks and between the last block and the commit; none of that may ever be visible as a blob.
TEST(AzureBlobSink, EveryRowLandsOnceUnderKillsWithTheContentOfAnUnkilledRun) {
  auto& azurite = SharedAzurite();
  const std::string container = azurite.create_container("chaos");
  constexpr uint64_t kRows = 300000;
  const std::string blocks = ", block_threshold_bytes: 8192, block_bytes: 4096";
  auto env = key_env();
  env["BUFFER_THRESHOLD_BYTES"] = "128KiB";  // small batches and WAL files: failpoints strike often
  env["WAL_BYTES_PER_FILE"] = "500000";

  PipelineFixture unkilled(sample_to_azure_config(kRows, azurite.endpoint(), container, "unkilled", blocks));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  PipelineFixture f(sample_to_azure_config(kRows, azurite.endpoint(), container, "killed", blocks));
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.2";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "0.8";
  const auto started = std::chrono::steady_clock::now();
  const ChaosRuns runs = sync_until_done_under_chaos(f, "bikehire", env, 1700, {.min_kills = 10});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 10) << runs.summary();

  TempDir killed_dir, unkilled_dir;
  const auto names = azurite.download(container, "killed/", killed_dir.path());
  azurite.download(container, "unkilled/", unkilled_dir.path());
  // Only whole blobs under batch names: staged blocks of a killed upload never show up as a blob.
  const std::regex name(R"(killed/bikehire-\d{6}-[0-9a-f]{32}-\d{20}\.parquet)");
  for (const auto& n : names) EXPECT_TRUE(std::regex_match(n, name)) << n;
  // Every upload a kill interrupted was finished by the replay under the same name: nothing is left staged only.
  auto staged = azurite.names(container, "killed/", /*uncommitted=*/true);
  staged.erase(std::unique(staged.begin(), staged.end()), staged.end());
  EXPECT_EQ(staged, names);
  size_t block_uploads = 0;
  for (const auto& n : names) block_uploads += azurite.client().committed_blocks(container, n).value().size() > 1;
  EXPECT_GT(block_uploads, names.size() / 2) << "most batches must go through Put Block + Put Block List";
  const std::string digest = parquet_digest(unkilled_dir.path());
  EXPECT_EQ(digest.substr(0, digest.find(' ', digest.find(' ') + 1)), fmt::format("{} {}", kRows, kRows));
  EXPECT_EQ(parquet_digest(killed_dir.path()), digest);
  std::printf("[ metrics  ] rows=%llu blobs=%zu block_uploads=%zu chaos_seconds=%.1f %s\n",
              static_cast<unsigned long long>(kRows), names.size(), block_uploads, seconds, runs.summary().c_str());
}

// A batch written again under the same id (a replay after a crash) finds its blob and leaves it as it is, even if
// the bytes would differ: 409 BlobAlreadyExists is "already landed". The bytes are read back without credentials
// (a public container), so the check does not rest on the client's own signing.
TEST(AzureBlobSink, AReplayedBatchNeverRewritesItsBlob) {
  auto& azurite = SharedAzurite();
  const std::string container = azurite.create_container("replay", /*public_read=*/true);
  ConnectorContext ctx;
  ctx.name = "lake";
  ctx.pipeline = "p";
  ctx.params = {{"account", AzuriteServer::kAccount},
                {"container", container},
                {"prefix", "x"},
                {"format", "jsonl"},
                {"compression", "auto"},
                {"account_key", AzuriteServer::kKey},
                {"endpoint", azurite.endpoint()}};
  auto sink = azure_blob_sink_spec().make_sink(ctx);
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
  const std::string blob = "x/p-000001-0123456789abcdef0123456789abcdef-00000000000000000001.jsonl";
  EXPECT_EQ(azurite.names(container, "x/"), std::vector<std::string>{blob});
  EXPECT_EQ(azurite.public_get(container, blob), "{\"v\":\"first\"}\n");
}

// A batch above block_threshold_bytes is staged as blocks (ids from the block number) and committed with one Put
// Block List: the committed block list says so, and the blobs hold every row once.
TEST(AzureBlobSink, LargeBatchesAreBlocksAndOneBlockListOfEveryRow) {
  auto& azurite = SharedAzurite();
  const std::string container = azurite.create_container("blocks", /*public_read=*/true);
  PipelineFixture f(fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: 200000, seed: 7 }}
data_sinks:
  lake:
    AzureBlob: {{ account: devstoreaccount1, container: {}, prefix: bl, format: jsonl, account_key: "${{AZ_KEY}}",
                 endpoint: "{}", block_threshold_bytes: 8388608, block_bytes: 1048576 }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)",
                                container, azurite.endpoint()));
  auto env = key_env();
  env["BUFFER_THRESHOLD_BYTES"] = "16MiB";
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TempDir dir;
  const auto names = azurite.download(container, "bl/", dir.path());
  ASSERT_FALSE(names.empty());
  auto blocks = azurite.client().committed_blocks(container, names.front());
  ASSERT_TRUE(blocks) << blocks.error().message;
  ASSERT_GE(blocks->size(), 8u);
  for (size_t i = 0; i < blocks->size(); ++i) EXPECT_EQ((*blocks)[i], azure_block_id(static_cast<int>(i + 1)));
  EXPECT_EQ(azurite.public_get(container, names.front()), read_text(dir / names.front()));
  EXPECT_EQ(duckdb_memory_value(fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) FROM "
                                            "read_json('{}/bl/*.jsonl', format='newline_delimited')",
                                            dir.path().string())),
            "200000 200000");
}

// partition_by writes Hive-style folders, one blob per partition value per batch.
TEST(AzureBlobSink, PartitionByWritesHiveFolders) {
  auto& azurite = SharedAzurite();
  const std::string container = azurite.create_container("parts");
  PipelineFixture f(sample_to_azure_config(5000, azurite.endpoint(), container, "p", ", partition_by: [event_type]"));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, key_env(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TempDir dir;
  const auto names = azurite.download(container, "p/", dir.path());
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) EXPECT_TRUE(n.starts_with("p/event_type=")) << n;
  EXPECT_EQ(
      duckdb_memory_value(fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || "
                                      "count(*) FILTER (WHERE event_type <> regexp_extract(filename, "
                                      "'event_type=([^/]+)/', 1)) FROM read_parquet('{}/**/*.parquet', filename=true)",
                                      dir.path().string())),
      "5000 5000 0");
}

// A SAS token (signed by the test, not by skipprd) and a connection string each land a run; the token is in every
// URL the sink sends, and still in no output or file.
TEST(AzureBlobSink, SasTokenAndConnectionStringWork) {
  auto& azurite = SharedAzurite();
  const std::string container = azurite.create_container("forms");
  const std::string sas = azurite.sas_token();
  {
    PipelineFixture f(
        sample_to_azure_config(1000, azurite.endpoint(), container, "sas", "", "sas_token: \"${AZ_SAS}\", "));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"AZ_SAS", sas}}, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("1000 landed"), std::string::npos) << r.out;
    expect_no_secret(r, f, sas.substr(sas.find("sig=") + 4));
  }
  {
    // The connection string names the endpoint itself: the sink's endpoint is left out.
    PipelineFixture f(fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: 1000, seed: 7 }}
data_sinks:
  lake:
    AzureBlob: {{ account: devstoreaccount1, container: {}, prefix: cs, connection_string: "${{AZ_CS}}" }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.lake
)",
                                  container));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"AZ_CS", azurite.connection_string()}}, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("1000 landed"), std::string::npos) << r.out;
    expect_no_secret(r, f, AzuriteServer::kKey);
  }
  EXPECT_FALSE(azurite.names(container, "sas/").empty());
  EXPECT_FALSE(azurite.names(container, "cs/").empty());
}

// What waiting cannot fix is exit 2 with one sentence, before anything is read or committed, and without the key or
// SAS anywhere: a wrong key, a forged SAS, a missing container, no credentials. An endpoint nobody answers on is
// retried, then exit 75.
TEST(AzureBlobSink, BadCredentialsAndAMissingContainerAreConfigErrorsAndADownServerIsRetryLater) {
  auto& azurite = SharedAzurite();
  const std::string container = azurite.create_container("bad");
  {
    // A well-formed key of the right length that is not the account's.
    const std::string wrong = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3OA==";
    PipelineFixture f(sample_to_azure_config(100, azurite.endpoint(), container, "p"));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"AZ_KEY", wrong}}, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the credentials from account_key are refused"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("committed"), std::string::npos) << "the sink is checked before anything is read";
    expect_no_secret(r, f, wrong);
  }
  {
    std::string forged = azurite.sas_token();
    forged.replace(forged.find("sig=") + 4, 4, "AAAA");
    PipelineFixture f(
        sample_to_azure_config(100, azurite.endpoint(), container, "p", "", "sas_token: \"${AZ_SAS}\", "));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"AZ_SAS", forged}}, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the credentials from sas_token are refused"), std::string::npos) << r.err;
    expect_no_secret(r, f, forged.substr(forged.find("sig=") + 4));
  }
  {
    PipelineFixture f(sample_to_azure_config(100, azurite.endpoint(), "no-such-container", "p"));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, key_env(), 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the container does not exist"), std::string::npos) << r.err;
    expect_no_secret(r, f, AzuriteServer::kKey);
  }
  {
    PipelineFixture f(sample_to_azure_config(100, azurite.endpoint(), container, "p", "", ""));
    auto r = f.skipprd(
        {"sync", "--pipeline", "bikehire", "--once"},
        {{"AZURE_STORAGE_CONNECTION_STRING", ""}, {"AZURE_STORAGE_KEY", ""}, {"AZURE_STORAGE_SAS_TOKEN", ""}}, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("no Azure credentials"), std::string::npos) << r.err;
  }
  {
    const std::string down = fmt::format("http://127.0.0.1:{}/devstoreaccount1", free_loopback_port());
    PipelineFixture f(sample_to_azure_config(100, down, container, "p"));
    auto env = key_env();
    env["SINK_RETRY_SECONDS"] = "2";
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
    EXPECT_EQ(r.exit_code, 75) << r.err;
    expect_no_secret(r, f, AzuriteServer::kKey);
  }
  EXPECT_TRUE(azurite.names(container).empty());
}

// A service that answers 503 ServerBusy (as Azure does when throttling) is retried, then exit 75 naming the code.
TEST(AzureBlobSink, AServerThatAnswers503IsRetriedThenRetryLater) {
  httplib::Server server;
  server.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_header("x-ms-error-code", "ServerBusy");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  PipelineFixture f(sample_to_azure_config(100, fmt::format("http://127.0.0.1:{}/devstoreaccount1", port), "c", "p"));
  auto env = key_env();
  env["SINK_RETRY_SECONDS"] = "2";
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  server.stop();
  thread.join();
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("HTTP 503 ServerBusy; retried"), std::string::npos) << r.err;
}

// How credentials and endpoints resolve, without a server: connection strings (values holding '='), the default and
// path-style endpoints, and what is refused in a sentence that quotes no secret.
TEST(AzureBlobSink, CredentialsAndEndpointsResolveAsTheServiceNamesThem) {
  AzureOptions o;
  o.account = "acct";
  o.connection_string = fmt::format(
      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};"
      "EndpointSuffix=core.usgovcloudapi.net",
      AzuriteServer::kKey);
  auto a = resolve_azure_account(o, "sink");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->endpoint, "https://acct.blob.core.usgovcloudapi.net");
  EXPECT_EQ(a->key.size(), 64u);
  EXPECT_EQ(a->source, "connection_string");

  o.connection_string.clear();
  o.sas_token = "?sv=2021-12-02&ss=b&sig=abc%2Bdef";
  o.endpoint = "http://localhost:10000/";
  a = resolve_azure_account(o, "sink");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->endpoint, "http://localhost:10000/acct");  // path-style: the account is the first segment
  EXPECT_EQ(a->sas, "sv=2021-12-02&ss=b&sig=abc%2Bdef");
  EXPECT_NE(std::find(a->secrets.begin(), a->secrets.end(), "abc+def"), a->secrets.end());

  o.endpoint.clear();
  o.sas_token.clear();
  o.account_key = AzuriteServer::kKey;
  a = resolve_azure_account(o, "sink");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->endpoint, "https://acct.blob.core.windows.net");

  o.sas_token = "sv=x&sig=y";
  a = resolve_azure_account(o, "sink");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().kind, ErrorKind::kConfig);
  EXPECT_NE(a.error().message.find("give one of"), std::string::npos) << a.error().message;

  o.sas_token.clear();
  o.account_key.clear();
  o.connection_string = "AccountName=other;AccountKey=" + std::string(AzuriteServer::kKey);
  a = resolve_azure_account(o, "sink");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("differs from the connection string's AccountName"), std::string::npos);
  EXPECT_EQ(a.error().message.find(AzuriteServer::kKey), std::string::npos);

  o.connection_string = "AccountName=acct;Garbage";
  a = resolve_azure_account(o, "sink");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("either AccountKey or SharedAccessSignature"), std::string::npos);
}

}  // namespace
}  // namespace skippr::test
