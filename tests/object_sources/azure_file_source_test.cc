// The File source on Azure Blob (Azurite): az://container/glob reads blobs with the same promises as local files and
// S3 objects — every good line once under SIGKILLs, exact dead letters named by URL, blobs added later picked up, a
// replaced blob refused by name — and a wrong key stops the run at start with exit 2 and no secret in sight.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/azurite_server.h"
#include "support/pipeline_fixture.h"
#include "support/remote_files_checks.h"

namespace skippr::test {
namespace {

RemoteInbox azure_inbox(const std::string& container, const std::string& key = AzuriteServer::kKey) {
  auto& azurite = SharedAzurite();
  return {fmt::format("az://{}/in/", container),
          [&azurite, container](const std::filesystem::path& dir) { azurite.upload(dir, container, "in/"); },
          {},
          fmt::format(", account: {}, account_key: \"{}\", endpoint: \"{}\"", AzuriteServer::kAccount, key,
                      azurite.endpoint())};
}

TEST(AzureFileSource, GzipBlobsUnderKillsLandEveryGoodLineOnceAndEveryBadLineInTheDeadLetters) {
  expect_every_line_once_under_kills(azure_inbox(SharedAzurite().create_container("inbox")), 60, 10, 1900);
}

TEST(AzureFileSource, NewBlobsArePickedUpAndAReplacedBlobIsAnErrorNamingIt) {
  expect_new_objects_read_and_replaced_ones_refused(azure_inbox(SharedAzurite().create_container("replace")));
}

TEST(AzureFileSource, AWrongKeyOrAMissingContainerIsExit2BeforeAnythingIsWritten) {
  const std::string wrong_key = "d3Jvbmcta2V5LXRoYXQtaXMtbm90LXRoZS1hY2NvdW50cy1rZXktYXQtYWxs";
  for (const auto& [inbox, says] :
       {std::pair{azure_inbox(SharedAzurite().create_container("denied"), wrong_key), std::string("refused")},
        std::pair{azure_inbox("no-such-container"), std::string("the container does not exist")}}) {
    PipelineFixture f(fmt::format(R"(data_sources:
  inbox:
    File: {{ path: "{}*.jsonl"{} }}
data_sinks:
  warehouse:
    DuckDB: {{ path: out.duckdb, table: events }}
pipelines:
  files:
    data_source: data_sources.inbox
    data_sink: data_sinks.warehouse
)",
                                  inbox.url, inbox.more_params));
    auto r = f.skipprd({"sync", "--pipeline", "files", "--once"}, {}, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(wrong_key), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb")));
  }
}

}  // namespace
}  // namespace skippr::test
