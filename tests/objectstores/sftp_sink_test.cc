// The SFTP sink against a private OpenSSH sshd (started once for this binary): Sample -> SFTP under chaos kills lands
// every row once with the content of an unkilled run and leaves no temp file, a replayed batch never rewrites its
// file, and what no retry can fix (a host key that does not match, refused credentials, a missing or read-only
// folder) stops the run with exit 2 and one sentence that carries no secret.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>

#include "core/connector.h"
#include "sinks/sftp/sftp_sink.h"
#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"
#include "support/sshd_server.h"

namespace skippr::test {
namespace {

// The SFTP sink's parameters for this server, key login; `changes` replace them ("" drops one).
std::string sample_to_sftp_config(uint64_t rows, const std::filesystem::path& folder,
                                  const std::map<std::string, std::string>& changes = {}) {
  auto& sshd = SharedSshd();
  std::map<std::string, std::string> params = {
      {"host", "127.0.0.1"},
      {"port", std::to_string(sshd.port())},
      {"user", SshdServer::user()},
      {"private_key_file", sshd.client_key().string()},
      {"known_hosts_file", sshd.known_hosts().string()},
      {"path", folder.string()},
      {"format", "parquet"},
  };
  for (const auto& [k, v] : changes) params[k] = v;
  std::string flow;
  for (const auto& [k, v] : params) {
    if (!v.empty()) flow += fmt::format("{}{}: {}", flow.empty() ? "" : ", ", k, v);
  }
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: 7 }}
data_sinks:
  remote:
    SFTP: {{ {} }}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.remote
)",
                     rows, flow);
}

// Every file under `dir`, relative to it, sorted.
std::vector<std::string> files_under(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(std::filesystem::relative(e.path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Batch one_value(const std::string& value) {
  Batch b;
  b.add_column({"v", Type::kString});
  b.columns[0].append_string(value);
  b.rows = 1;
  return b;
}

// A batch written again under the same id (a replay after a crash) finds its file and leaves it as it is, even if
// the bytes would differ; a temp a killed run left behind is overwritten by the retry and renamed into place.
TEST(SftpSink, AReplayedBatchNeverRewritesItsFileAndAStaleTempIsOverwritten) {
  auto& sshd = SharedSshd();
  const auto folder = sshd.upload_folder("replay");
  ConnectorContext ctx;
  ctx.name = "remote";
  ctx.pipeline = "p";
  ctx.params = {{"host", "127.0.0.1"},
                {"port", sshd.port()},
                {"user", SshdServer::user()},
                {"private_key_file", sshd.client_key().string()},
                {"known_hosts_file", sshd.known_hosts().string()},
                {"path", folder.string()},
                {"format", "jsonl"},
                {"compression", "auto"}};
  auto sink = sftp_sink_spec().make_sink(ctx);
  ASSERT_TRUE(sink) << sink.error().message;
  ASSERT_TRUE((*sink)->open());
  const BatchId id{"p", 1, 1, "0123456789abcdef0123456789abcdef"};
  auto first = (*sink)->write(one_value("first"), id);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, WriteOutcome::kApplied);
  auto again = (*sink)->write(one_value("second"), id);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, WriteOutcome::kAlreadyApplied);
  const std::string landed = "p-000001-0123456789abcdef0123456789abcdef-00000000000000000001.jsonl";
  EXPECT_EQ(read_text(folder / landed), "{\"v\":\"first\"}\n");

  // A kill halfway through the next batch's temp: longer than what the retry writes, so truncation shows.
  const std::string next = "p-000001-0123456789abcdef0123456789abcdef-00000000000000000002.jsonl";
  write_text(folder / (next + ".tmp"), std::string(10000, 'x'));
  sshd.give_to_user(folder / (next + ".tmp"));
  auto retried = (*sink)->write(one_value("third"), BatchId{"p", 1, 2, "0123456789abcdef0123456789abcdef"});
  ASSERT_TRUE(retried) << retried.error().message;
  EXPECT_EQ(*retried, WriteOutcome::kApplied);
  EXPECT_EQ(read_text(folder / next), "{\"v\":\"third\"}\n");
  EXPECT_EQ(files_under(folder), (std::vector<std::string>{landed, next}));
}

// partition_by writes Hive-style folders (made with mkdir as needed), one file per partition value per batch.
TEST(SftpSink, PartitionByWritesHiveFolders) {
  auto& sshd = SharedSshd();
  const auto folder = sshd.upload_folder("parts");
  PipelineFixture f(sample_to_sftp_config(5000, folder, {{"partition_by", "[event_type]"}}));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto files = files_under(folder);
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) EXPECT_TRUE(file.starts_with("event_type=")) << file;
  EXPECT_EQ(
      duckdb_memory_value(fmt::format("SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || "
                                      "count(*) FILTER (WHERE event_type <> regexp_extract(filename, "
                                      "'event_type=([^/]+)/', 1)) FROM read_parquet('{}/**/*.parquet', filename=true)",
                                      folder.string())),
      "5000 5000 0");
}

// A password (from ${VAR}) logs in too, and lands the rows; no file of DATA_DIR holds it.
TEST(SftpSink, PasswordLoginLandsTheRows) {
  auto& sshd = SharedSshd();
  const auto folder = sshd.upload_folder("password");
  PipelineFixture f(
      sample_to_sftp_config(1000, folder, {{"private_key_file", ""}, {"password", "\"${SFTP_TEST_PASSWORD}\""}}));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SFTP_TEST_PASSWORD", sshd.password()}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1000 landed"), std::string::npos) << r.out;
  EXPECT_EQ(parquet_digest(folder).substr(0, 10), "1000 1000 ");
  EXPECT_TRUE(files_containing(f.root() / "data", sshd.password()).empty());
}

struct BadCase {
  std::string what;
  std::map<std::string, std::string> changes;
  std::string sentence;
};

// What waiting cannot fix is exit 2 with one sentence, naming no secret: a host key that does not match or is
// unknown, a key or a password the server refuses, a missing remote folder, one the user may not write. A port
// nobody listens on is retried, then exit 75. strict_host_key_checking: false is the only way past the host key.
TEST(SftpSink, BadHostKeysCredentialsAndFoldersAreConfigErrorsAndADownServerIsRetryLater) {
  auto& sshd = SharedSshd();
  const auto folder = sshd.upload_folder("bad");
  const std::string key_body = read_text(sshd.unauthorized_key()).substr(40, 30);  // a piece of the key itself
  write_text(folder.parent_path() / "empty_known_hosts", "");
  const std::vector<BadCase> cases = {
      {"host key mismatch",
       {{"known_hosts_file", sshd.wrong_known_hosts().string()}},
       "does not match the one in known_hosts_file"},
      {"unknown host",
       {{"known_hosts_file", (folder.parent_path() / "empty_known_hosts").string()}},
       "is not in known_hosts_file"},
      {"wrong key", {{"private_key_file", sshd.unauthorized_key().string()}}, "refused the key in"},
      {"wrong password",
       {{"private_key_file", ""}, {"password", "wr0ng-pass-value"}},
       "refused the password for user 'skippr-sftp'"},
      {"missing folder", {{"path", (folder / "nope").string()}}, "does not exist on"},
      {"read-only folder", {{"path", sshd.read_only_folder().string()}}, "may not create files in"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    PipelineFixture f(sample_to_sftp_config(100, folder, c.changes));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SINK_RETRY_SECONDS", "2"}}, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.sentence), std::string::npos) << r.err;
    for (const std::string& secret : {key_body, std::string("wr0ng-pass-value"), sshd.password()}) {
      EXPECT_EQ((r.out + r.err).find(secret), std::string::npos) << secret;
    }
  }
  EXPECT_TRUE(files_under(folder).empty());
  {
    PipelineFixture f(sample_to_sftp_config(
        100, folder, {{"known_hosts_file", sshd.wrong_known_hosts().string()}, {"strict_host_key_checking", "false"}}));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {}, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  {
    PipelineFixture f(sample_to_sftp_config(100, folder, {{"port", std::to_string(free_loopback_port())}}));
    auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, {{"SINK_RETRY_SECONDS", "2"}}, 120);
    EXPECT_EQ(r.exit_code, 75) << r.err;
  }
}

}  // namespace
}  // namespace skippr::test
