// The sink suite (tests/support/sink_suite.h) on every object store that runs here: S3 (moto_server), GCS (the
// emulator), AzureBlob (Azurite) and SFTP (OpenSSH's sshd), each in a bucket, container or folder of its own; and
// Athena (Hive Parquet on moto's S3, its tables in moto's Glue), read back from its objects.
#include <fmt/format.h>

#include <cctype>
#include <filesystem>

#include "support/azurite_server.h"
#include "support/gcs_emulator.h"
#include "support/moto_server.h"
#include "support/sink_suite.h"
#include "support/sshd_server.h"

namespace skippr::test {
namespace {

const SinkUnderTest& s3_under_test() {
  static const SinkUnderTest sut = [] {
    const std::string bucket = SharedMoto().create_bucket("suite");
    SinkUnderTest s = object_store_under_test(
        "S3",
        [bucket](const std::string& prefix) {
          return fmt::format(R"(S3: {{ bucket: {}, prefix: "{}", format: parquet }})", bucket, prefix);
        },
        [bucket](const std::string& prefix, const std::filesystem::path& dir) {
          SharedMoto().download(bucket, prefix, dir);  // as the aws CLI does: named relative to the prefix
          return dir;
        });
    s.env = SharedMoto().env();
    s.mistakes = {
        {"S3: { bucket: no-such-bucket-here, prefix: p, format: parquet }", "no-such-bucket-here", ""},
        {fmt::format(R"(S3: {{ bucket: {}, prefix: "p/{{stream}}", format: parquet }})", bucket), "holds {stream}", ""},
        {fmt::format("S3: {{ bucket: {}/folder, format: parquet }}", bucket), "must be a bucket name", ""},
    };
    return s;
  }();
  return sut;
}

// Athena's Glue table is named after the prefix's first folder, with {stream} in it when the prefix has one.
const SinkUnderTest& athena_under_test() {
  static const SinkUnderTest sut = [] {
    const std::string bucket = SharedMoto().create_bucket("suite-athena");
    SinkUnderTest s = object_store_under_test(
        "Athena",
        [bucket](const std::string& prefix) {
          std::string table = prefix.substr(0, prefix.find('/'));
          for (char& c : table) c = std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_';
          if (prefix.find("{stream}") != std::string::npos) table += "_{stream}";
          return fmt::format(R"(Athena: {{ bucket: {}, prefix: "{}", database: suite, table: "{}" }})", bucket, prefix,
                             table);
        },
        [bucket](const std::string& prefix, const std::filesystem::path& dir) {
          SharedMoto().download(bucket, prefix, dir);
          return dir;
        });
    s.env = SharedMoto().env();
    s.mistakes = {
        {fmt::format(R"(Athena: {{ bucket: {}, database: suite, table: Trips }})", bucket), "is not a Glue name", ""},
        {fmt::format(R"(Athena: {{ bucket: {}, database: suite, table: "t_{{stream}}" }})", bucket), "names one stream",
         ""},
    };
    return s;
  }();
  return sut;
}

const SinkUnderTest& gcs_under_test() {
  static const SinkUnderTest sut = [] {
    const std::string bucket = SharedGcs().create_bucket("suite");
    SinkUnderTest s = object_store_under_test(
        "GCS",
        [bucket](const std::string& prefix) {
          return fmt::format(R"(GCS: {{ bucket: {}, prefix: "{}", format: parquet }})", bucket, prefix);
        },
        [bucket](const std::string& prefix, const std::filesystem::path& dir) {
          SharedGcs().download(bucket, prefix, dir);  // as dir/<name>
          return dir / prefix;
        });
    s.env = SharedGcs().env();
    s.mistakes = {
        {"GCS: { bucket: no-such-bucket-here, prefix: p, format: parquet }", "no-such-bucket-here", ""},
    };
    return s;
  }();
  return sut;
}

const SinkUnderTest& azure_under_test() {
  static const SinkUnderTest sut = [] {
    const std::string container = SharedAzurite().create_container("suite");
    const std::string endpoint = SharedAzurite().endpoint();
    SinkUnderTest s = object_store_under_test(
        "AzureBlob",
        [container, endpoint](const std::string& prefix) {
          return fmt::format(R"(AzureBlob: {{ account: devstoreaccount1, container: {}, prefix: "{}", format: )"
                             R"(parquet, account_key: "${{AZ_KEY}}", endpoint: "{}" }})",
                             container, prefix, endpoint);
        },
        [container](const std::string& prefix, const std::filesystem::path& dir) {
          SharedAzurite().download(container, prefix, dir);  // as dir/<name>
          return dir / prefix;
        });
    s.env = {{"AZ_KEY", AzuriteServer::kKey}};
    s.mistakes = {
        {fmt::format(R"(AzureBlob: {{ account: devstoreaccount1, container: {}, prefix: p, account_key: )"
                     R"("d3JvbmdrZXl3cm9uZ2tleQ==", endpoint: "{}" }})",
                     container, endpoint),
         "AzureBlob sink", "d3JvbmdrZXl3cm9uZ2tleQ=="},
    };
    return s;
  }();
  return sut;
}

const SinkUnderTest& sftp_under_test() {
  static const SinkUnderTest sut = [] {
    auto& sshd = SharedSshd();
    const std::filesystem::path root = sshd.upload_folder("suite");
    auto params = [&sshd](const std::string& path) {
      return fmt::format(
          "host: 127.0.0.1, port: {}, user: {}, private_key_file: {}, known_hosts_file: {}, path: \"{}\"", sshd.port(),
          SshdServer::user(), sshd.client_key().string(), sshd.known_hosts().string(), path);
    };
    SinkUnderTest s = object_store_under_test(
        "SFTP",
        [root, params](const std::string& prefix) {
          // The folder a sink is given must exist; the stream folders under it are the sink's to make.
          const std::filesystem::path base = root / prefix.substr(0, prefix.find('/'));
          std::filesystem::create_directories(base);
          SharedSshd().give_to_user(base);
          return fmt::format("SFTP: {{ {}, format: parquet }}", params((root / prefix).string()));
        },
        [root](const std::string& prefix, const std::filesystem::path&) { return root / prefix; });
    s.mistakes = {
        {fmt::format("SFTP: {{ {}, format: parquet }}", params((root / "no-such-folder").string())), "no-such-folder",
         ""},
        {fmt::format("SFTP: {{ host: 127.0.0.1, port: {}, user: {}, password: \"hunter2wrong\", known_hosts_file: "
                     "{}, path: \"{}\" }}",
                     sshd.port(), SshdServer::user(), sshd.known_hosts().string(), root.string()),
         "SFTP sink", "hunter2wrong"},
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(S3, s3_under_test());
INSTANTIATE_SINK_SUITE(Athena, athena_under_test());
INSTANTIATE_SINK_SUITE(GCS, gcs_under_test());
INSTANTIATE_SINK_SUITE(AzureBlob, azure_under_test());
INSTANTIATE_SINK_SUITE(SFTP, sftp_under_test());

}  // namespace skippr::test
