// The File source on SFTP (a private OpenSSH sshd): sftp://host/folder/glob reads files with the same promises as
// local files and objects — every good line once under SIGKILLs, exact dead letters named by URL, files added later
// picked up, a replaced file (another size or mtime) refused by name — and what no retry can fix (a host key that
// does not match, a refused key or password, a folder the user may not read) stops the run at start with exit 2 and
// no secret in sight; a server nobody answers on is exit 75. The store is also checked on its own: listing, a
// streamed download, a file replaced between listing and download, a missing folder.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <fstream>

#include "clients/sftp/sftp_client.h"
#include "sources/file/sftp_file_store.h"
#include "support/pipeline_fixture.h"
#include "support/remote_files_checks.h"
#include "support/sshd_server.h"

namespace skippr::test {
namespace {

// Copies every file under `from` into `to`, as a well-behaved writer would: a hidden temp name, then a rename (so the
// source never lists a half-written file), owned by the SFTP user as if it had uploaded them.
void upload_as_user(const std::filesystem::path& from, const std::filesystem::path& to) {
  auto& sshd = SharedSshd();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(from)) {
    const auto target = to / std::filesystem::relative(entry.path(), from);
    if (entry.is_directory()) {
      std::filesystem::create_directories(target);
      sshd.give_to_user(target);
      continue;
    }
    std::filesystem::create_directories(target.parent_path());
    const auto temp = target.parent_path() / ("." + target.filename().string() + ".part");
    std::filesystem::copy_file(entry.path(), temp, std::filesystem::copy_options::overwrite_existing);
    sshd.give_to_user(temp);
    std::filesystem::rename(temp, target);
  }
}

std::string connection_params(const std::map<std::string, std::string>& changes = {}) {
  auto& sshd = SharedSshd();
  std::map<std::string, std::string> params = {
      {"user", SshdServer::user()},
      {"private_key_file", sshd.client_key().string()},
      {"known_hosts_file", sshd.known_hosts().string()},
  };
  for (const auto& [k, v] : changes) params[k] = v;
  std::string flow;
  for (const auto& [k, v] : params) {
    if (!v.empty()) flow += fmt::format(", {}: {}", k, v);
  }
  return flow;
}

// `authority` as the URL gives it: "127.0.0.1:PORT" (user from the parameter) or "user@127.0.0.1:PORT".
RemoteInbox sftp_inbox(const std::string& prefix, bool user_in_url = false,
                       const std::map<std::string, std::string>& changes = {}) {
  auto& sshd = SharedSshd();
  const auto folder = sshd.upload_folder(prefix);
  auto params = changes;
  if (user_in_url) params["user"] = "";
  return {fmt::format("sftp://{}127.0.0.1:{}{}/", user_in_url ? std::string(SshdServer::user()) + "@" : "", sshd.port(),
                      folder.string()),
          [folder](const std::filesystem::path& dir) { upload_as_user(dir, folder); },
          {},
          connection_params(params)};
}

SftpOptions key_login() {
  auto& sshd = SharedSshd();
  SftpOptions o;
  o.user = SshdServer::user();
  o.private_key_file = sshd.client_key();
  o.known_hosts_file = sshd.known_hosts();
  o.timeout_seconds = 10;
  return o;
}

std::unique_ptr<FileStore> store_on(const std::string& url, const std::filesystem::path& cache) {
  auto store = sftp_file_store(url, key_login(), false, cache, "File source 'test'");
  EXPECT_TRUE(store) << store.error().message;
  return std::move(*store);
}

TEST(SftpFileSource, GzipFilesUnderKillsLandEveryGoodLineOnceAndEveryBadLineInTheDeadLetters) {
  expect_every_line_once_under_kills(sftp_inbox("inbox"), 60, 10, 2100);
}

TEST(SftpFileSource, NewFilesArePickedUpAndAReplacedFileIsAnErrorNamingIt) {
  expect_new_objects_read_and_replaced_ones_refused(sftp_inbox("replace", /*user_in_url=*/true));
}

// The store alone: what it lists and downloads is what the server holds, in the version listed.
TEST(SftpFileSource, TheStoreListsMatchingFilesAndDownloadsExactlyTheVersionListed) {
  auto& sshd = SharedSshd();
  const auto folder = sshd.upload_folder("store");
  TempDir input;
  TempDir cache;
  write_text(input / "a.jsonl", "{\"id\":1}\n");
  std::filesystem::create_directories(input / "sub" / "deeper");
  write_text(input / "sub" / "b.jsonl", "{\"id\":2}\n");
  write_text(input / "sub" / "deeper" / "c.jsonl", "{\"id\":3}\n");
  write_text(input / "skip.csv", "id\n4\n");
  std::string big;
  for (int i = 0; big.size() < (3u << 20); ++i) big += fmt::format("{{\"id\":{}}}\n", i);  // many 256 KiB reads
  write_text(input / "sub" / "big.jsonl", big);
  upload_as_user(input.path(), folder);
  std::filesystem::create_symlink(folder / "a.jsonl", folder / "link.jsonl");

  const std::string base = fmt::format("sftp://127.0.0.1:{}{}/", sshd.port(), folder.string());
  auto store = store_on(base + "**/*.jsonl", cache.path());
  ASSERT_TRUE(store->open()) << "open";
  auto listed = store->list();
  ASSERT_TRUE(listed) << listed.error().message;
  std::vector<std::string> names;
  for (const auto& f : *listed) names.push_back(f.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"a.jsonl", "link.jsonl", "sub/b.jsonl", "sub/big.jsonl", "sub/deeper/c.jsonl"}));
  const StoredFile& big_file = (*listed)[3];
  EXPECT_EQ(big_file.identity.size, big.size());
  EXPECT_EQ(big_file.identity.version,
            fmt::format("{}:{}", big.size(), big_file.identity.mtime_ns));  // size:mtime stands for the content

  auto path = store->fetch(big_file.name, big_file.identity);
  ASSERT_TRUE(path) << path.error().message;
  EXPECT_EQ(read_text(*path), big);
  store->release();
  EXPECT_FALSE(std::filesystem::exists(*path));

  auto now = store->identity("sub/b.jsonl");
  ASSERT_TRUE(now && *now);
  EXPECT_EQ(**now, (*listed)[2].identity);
  auto gone = store->identity("sub/none.jsonl");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(*gone);

  // One segment: the base folder only, nothing below it.
  auto flat = store_on(base + "*.jsonl", cache.path())->list();
  ASSERT_TRUE(flat) << flat.error().message;
  EXPECT_EQ(flat->size(), 2u);

  // Replaced between listing and download: another size, so not the version listed.
  write_text(folder / "sub" / "b.jsonl", "{\"id\":2}\n{\"id\":20}\n");
  auto replaced = store->fetch("sub/b.jsonl", (*listed)[2].identity);
  ASSERT_FALSE(replaced);
  EXPECT_EQ(replaced.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(replaced.error().message.find(base + "sub/b.jsonl was replaced while it was being read"), std::string::npos)
      << replaced.error().message;
  std::filesystem::remove(folder / "a.jsonl");
  auto deleted = store->fetch("a.jsonl", (*listed)[0].identity);
  ASSERT_FALSE(deleted);
  EXPECT_EQ(deleted.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(deleted.error().message.find(base + "a.jsonl was deleted"), std::string::npos) << deleted.error().message;
}

// A folder that is not there yet holds no files (they may come later); one the user may not read is kConfig; the
// user's home is reachable as ~/; a URL without a host or folder, or whose port disagrees with the parameter, is
// kConfig.
TEST(SftpFileSource, MissingFoldersAreEmptyUnreadableOnesAreConfigErrorsAndHomeIsTilde) {
  auto& sshd = SharedSshd();
  TempDir cache;
  const std::string server = fmt::format("sftp://127.0.0.1:{}", sshd.port());
  auto missing = store_on(server + "/no/such/folder/**/*.jsonl", cache.path())->list();
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_TRUE(missing->empty());

  const auto closed = sshd.read_only_folder();
  std::filesystem::permissions(closed, std::filesystem::perms::owner_all);  // root's, 0700
  auto denied = store_on(server + closed.string() + "/*.jsonl", cache.path())->list();
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().kind, ErrorKind::kConfig);
  EXPECT_NE(denied.error().message.find("permission denied"), std::string::npos) << denied.error().message;

  const std::filesystem::path home = std::filesystem::path("/home") / SshdServer::user();
  const std::string sub = fmt::format("skippr-test-{}", ::getpid());
  std::filesystem::create_directories(home / sub);
  write_text(home / sub / "h.jsonl", "{\"id\":1}\n");
  auto in_home = store_on(server + "/~/" + sub + "/*.jsonl", cache.path())->list();
  std::filesystem::remove_all(home / sub);
  ASSERT_TRUE(in_home) << in_home.error().message;
  ASSERT_EQ(in_home->size(), 1u);
  EXPECT_EQ((*in_home)[0].name, "h.jsonl");

  for (const std::string& url :
       {std::string("sftp:///in/*.jsonl"), std::string("sftp://host"), std::string("sftp://host:99999/in/*.jsonl")}) {
    auto bad = sftp_file_store(url, key_login(), false, cache.path(), "File source 'test'");
    ASSERT_FALSE(bad) << url;
    EXPECT_EQ(bad.error().kind, ErrorKind::kConfig) << url;
  }
  auto with_password = sftp_file_store("sftp://me:s3cr3t-in-url@host/in/*.jsonl", key_login(), false, cache.path(),
                                       "File source 'test'");
  ASSERT_FALSE(with_password);
  EXPECT_EQ(with_password.error().message.find("s3cr3t-in-url"), std::string::npos) << with_password.error().message;
  SftpOptions on_other_port = key_login();
  on_other_port.port = 2222;
  auto disagree = sftp_file_store(server + "/in/*.jsonl", on_other_port, true, cache.path(), "File source 'test'");
  ASSERT_FALSE(disagree);
  EXPECT_NE(disagree.error().message.find("differ"), std::string::npos) << disagree.error().message;
}

// What waiting cannot fix is exit 2 before anything is written, with one sentence naming no secret.
TEST(SftpFileSource, BadHostKeysRefusedCredentialsAndUnreadableFoldersAreExit2AndADownServerIs75) {
  auto& sshd = SharedSshd();
  const std::string key_body = read_text(sshd.unauthorized_key()).substr(40, 30);  // a piece of the key itself
  struct BadCase {
    std::string what;
    std::map<std::string, std::string> changes;
    std::string sentence;
  };
  const std::vector<BadCase> cases = {
      {"host key mismatch",
       {{"known_hosts_file", sshd.wrong_known_hosts().string()}},
       "does not match the one in known_hosts_file"},
      {"wrong key", {{"private_key_file", sshd.unauthorized_key().string()}}, "refused the key in"},
      {"wrong password",
       {{"private_key_file", ""}, {"password", "wr0ng-pass-value"}},
       "refused the password for user 'skippr-sftp'"},
  };
  auto run = [](const RemoteInbox& inbox, const std::string& pattern, int want, const std::string& sentence,
                const std::vector<std::string>& secrets) {
    PipelineFixture f(fmt::format(R"(data_sources:
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
                                  inbox.url, pattern, inbox.more_params));
    auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, {{"SINK_RETRY_SECONDS", "2"}}, 120);
    EXPECT_EQ(r.exit_code, want) << r.err;
    EXPECT_NE(r.err.find(sentence), std::string::npos) << r.err;
    for (const auto& secret : secrets) EXPECT_EQ((r.out + r.err).find(secret), std::string::npos) << secret;
    EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
  };
  const std::vector<std::string> secrets = {key_body, "wr0ng-pass-value", sshd.password()};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    run(sftp_inbox("bad", false, c.changes), "*.jsonl", 2, c.sentence, secrets);
  }
  {
    SCOPED_TRACE("unreadable folder");
    const auto closed = sshd.read_only_folder();
    std::filesystem::permissions(closed, std::filesystem::perms::owner_all);
    RemoteInbox inbox = sftp_inbox("unused");
    inbox.url = fmt::format("sftp://127.0.0.1:{}{}/", sshd.port(), closed.string());
    run(inbox, "*.jsonl", 2, "permission denied", secrets);
  }
  {
    SCOPED_TRACE("nobody listening");
    RemoteInbox inbox = sftp_inbox("down");
    inbox.url = fmt::format("sftp://127.0.0.1:{}/tmp/", free_loopback_port());
    run(inbox, "*.jsonl", 75, "cannot reach", secrets);
  }
}

}  // namespace
}  // namespace skippr::test
