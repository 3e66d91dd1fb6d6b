#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "config/config.h"
#include "config_test_util.h"

namespace skippr {
namespace {

using skippr::testing::ScopedEnv;
using ::testing::HasSubstr;

// Every variable settings_from_env reads, unset for the test, then optionally set.
class SettingsTest : public ::testing::Test {
 protected:
  SettingsTest() {
    for (const char* name :
         {"DATA_DIR", "WAL_STORAGE", "BUFFER_THRESHOLD_BYTES", "BUFFER_THRESHOLD_SECONDS", "WAL_BYTES_PER_FILE",
          "SYNC_FREQUENCY", "SINK_RETRY_SECONDS", "SKIPPR_CHAOS_MODE", "SKIPPR_CHAOS_MIN_SECONDS",
          "SKIPPR_CHAOS_MAX_SECONDS", "SKIPPR_CHAOS_SEED", "SKIPPR_STATE_STORE", "SKIPPR_WAL_S3_BUCKET",
          "SKIPPR_WAL_S3_PREFIX", "SKIPPR_STATE_DYNAMODB_TABLE", "SKIPPR_LEASE_SECONDS", "SKIPPR_PEERS",
          "SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS"}) {
      env_.push_back(std::make_unique<ScopedEnv>(name, std::nullopt));
    }
  }
  void set(const char* name, const char* value) { env_.push_back(std::make_unique<ScopedEnv>(name, value)); }

 private:
  std::vector<std::unique_ptr<ScopedEnv>> env_;
};

TEST_F(SettingsTest, Defaults) {
  auto s = settings_from_env();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->data_dir, std::filesystem::current_path() / "data");
  EXPECT_EQ(s->wal_storage, "disk");
  EXPECT_EQ(s->buffer_threshold_bytes, 10ull << 20);
  EXPECT_EQ(s->buffer_threshold_seconds, 60);
  EXPECT_EQ(s->wal_bytes_per_file, 64ull << 20);
  EXPECT_EQ(s->sync_frequency_seconds, 900);
  EXPECT_EQ(s->sink_retry_seconds, 60);
  EXPECT_FALSE(s->chaos_mode.has_value());
  EXPECT_EQ(s->chaos_min_seconds, 5);
  EXPECT_EQ(s->chaos_max_seconds, 30);
  EXPECT_FALSE(s->chaos_seed.has_value());
}

TEST_F(SettingsTest, ReadsEveryVariable) {
  set("DATA_DIR", "rel/dir");
  set("WAL_STORAGE", "disk");
  set("BUFFER_THRESHOLD_BYTES", "512KiB");
  set("BUFFER_THRESHOLD_SECONDS", "2.5");
  set("WAL_BYTES_PER_FILE", "1048576");
  set("SYNC_FREQUENCY", "10");
  set("SINK_RETRY_SECONDS", "0");
  set("SKIPPR_CHAOS_MODE", "Yes");
  set("SKIPPR_CHAOS_MIN_SECONDS", "0.5");
  set("SKIPPR_CHAOS_MAX_SECONDS", "1.5");
  set("SKIPPR_CHAOS_SEED", "18446744073709551615");
  auto s = settings_from_env();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->data_dir, std::filesystem::current_path() / "rel/dir");
  EXPECT_EQ(s->buffer_threshold_bytes, 512u * 1024);
  EXPECT_EQ(s->buffer_threshold_seconds, 2.5);
  EXPECT_EQ(s->wal_bytes_per_file, 1048576u);
  EXPECT_EQ(s->sync_frequency_seconds, 10);
  EXPECT_EQ(s->sink_retry_seconds, 0);
  EXPECT_EQ(s->chaos_mode, std::optional<bool>(true));
  EXPECT_EQ(s->chaos_min_seconds, 0.5);
  EXPECT_EQ(s->chaos_max_seconds, 1.5);
  EXPECT_EQ(s->chaos_seed, std::optional<uint64_t>(18446744073709551615ull));
}

TEST_F(SettingsTest, ChaosModeOffIsFalseNotUnset) {
  set("SKIPPR_CHAOS_MODE", "off");
  auto s = settings_from_env();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->chaos_mode, std::optional<bool>(false));
}

TEST_F(SettingsTest, MalformedNumberNamesTheVariableAndTheValue) {
  set("BUFFER_THRESHOLD_BYTES", "10 megs");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(s.error().message, HasSubstr("BUFFER_THRESHOLD_BYTES='10 megs' is not valid"));
  EXPECT_THAT(s.error().message, HasSubstr("10MiB"));
}

TEST_F(SettingsTest, EveryMalformedVariableIsReported) {
  set("SYNC_FREQUENCY", "often");
  set("SKIPPR_CHAOS_SEED", "-1");
  set("SKIPPR_CHAOS_MODE", "maybe");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("SYNC_FREQUENCY='often'"));
  EXPECT_THAT(s.error().message, HasSubstr("SKIPPR_CHAOS_SEED='-1'"));
  EXPECT_THAT(s.error().message, HasSubstr("SKIPPR_CHAOS_MODE='maybe'"));
}

TEST_F(SettingsTest, ChaosMinimumAboveMaximumIsAnError) {
  set("SKIPPR_CHAOS_MIN_SECONDS", "10");
  set("SKIPPR_CHAOS_MAX_SECONDS", "2");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("SKIPPR_CHAOS_MIN_SECONDS (10) is above SKIPPR_CHAOS_MAX_SECONDS (2)"));
}

TEST_F(SettingsTest, ZeroChaosSecondsIsAnError) {
  set("SKIPPR_CHAOS_MIN_SECONDS", "0");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("SKIPPR_CHAOS_MIN_SECONDS='0'"));
}

TEST_F(SettingsTest, ClusteredWalStorageNeedsExactlyOnePeerAndLocalState) {
  set("WAL_STORAGE", "clustered");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(s.error().message, HasSubstr("WAL_STORAGE=clustered needs SKIPPR_PEERS"));

  set("SKIPPR_PEERS", "10.0.0.2:7401,10.0.0.3:7401");
  s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("names several peers"));

  ::setenv("SKIPPR_PEERS", "10.0.0.2:7401", 1);  // the ScopedEnv above puts it back
  set("SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS", "2.5");
  s = settings_from_env();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->wal_storage, "clustered");
  EXPECT_EQ(s->cluster_peer, "10.0.0.2:7401");
  EXPECT_EQ(s->cluster_ack_timeout_seconds, 2.5);

  // With the state in DynamoDB, takeover is automatic (engine/pipeline_storage.h).
  set("SKIPPR_STATE_STORE", "dynamodb");
  set("SKIPPR_STATE_DYNAMODB_TABLE", "t");
  s = settings_from_env();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->state_store, "dynamodb");
}

TEST_F(SettingsTest, AnS3WalNeedsItsBucketAndTheDynamoDbStateStoreWithItsTable) {
  set("WAL_STORAGE", "s3");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(s.error().message, HasSubstr("WAL_STORAGE=s3 needs SKIPPR_WAL_S3_BUCKET"));
  EXPECT_THAT(s.error().message, HasSubstr("use WAL_STORAGE=s3 with SKIPPR_STATE_STORE=dynamodb"));

  set("SKIPPR_WAL_S3_BUCKET", "wal-bucket");
  set("SKIPPR_WAL_S3_PREFIX", "/skippr");
  set("SKIPPR_STATE_STORE", "dynamodb");
  set("SKIPPR_STATE_DYNAMODB_TABLE", "skippr-state");
  set("SKIPPR_LEASE_SECONDS", "5");
  auto good = settings_from_env();
  ASSERT_TRUE(good.has_value()) << good.error().message;
  EXPECT_EQ(good->wal_storage, "s3");
  EXPECT_EQ(good->wal_s3_prefix, "skippr/");
  EXPECT_EQ(good->state_store, "dynamodb");
  EXPECT_EQ(good->lease_seconds, 5);
}

TEST_F(SettingsTest, TheDynamoDbStateStoreAloneIsRefused) {
  set("SKIPPR_STATE_STORE", "dynamodb");
  set("SKIPPR_STATE_DYNAMODB_TABLE", "t");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("WAL_STORAGE=disk with SKIPPR_STATE_STORE=dynamodb does not work"));
}

TEST_F(SettingsTest, UnknownWalStorage) {
  set("WAL_STORAGE", "tape");
  auto s = settings_from_env();
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("must be disk, s3 or clustered"));
}

}  // namespace
}  // namespace skippr
