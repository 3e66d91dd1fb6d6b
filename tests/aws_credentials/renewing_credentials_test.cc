// Signing and credentials shared by every AWS client: the canonical query SigV4 signs, temporary credentials renewed
// ahead of their expiry and after the service refuses them as expired — in process, against the gate in front of
// moto that checks signatures and expiry as AWS does.
#include <gtest/gtest.h>

#include <atomic>

#include "clients/aws/aws_json.h"
#include "clients/aws/aws_request.h"
#include "clients/aws/renewing_credentials.h"
#include "clients/aws/s3_client.h"
#include "config/config_test_util.h"
#include "support/moto_server.h"

namespace skippr::test {
namespace {

using Clock = std::chrono::system_clock;
using namespace std::chrono_literals;

TEST(AwsCanonicalQuery, SortsByNameThenValueAndEncodesAsRfc3986) {
  // ListObjectsV2's second page: continuation-token sorts first, whatever order the URL has.
  EXPECT_EQ(aws_canonical_query("encoding-type=url&list-type=2&prefix=in%2F&continuation-token=1%2Fx%2By%3D"),
            "continuation-token=1%2Fx%2By%3D&encoding-type=url&list-type=2&prefix=in%2F");
  EXPECT_EQ(aws_canonical_query("uploads"), "uploads=");         // a name without a value signs as "name="
  EXPECT_EQ(aws_canonical_query("b=2&a=1&a=0"), "a=0&a=1&b=2");  // equal names by value
  EXPECT_EQ(aws_canonical_query("k=%7e-._%2f"), "k=~-._%2F");    // unreserved bytes bare, others %XX upper case
  EXPECT_EQ(aws_canonical_query("q=a b&&"), "q=a%20b");          // a raw space encoded, empty parts dropped
  EXPECT_EQ(aws_canonical_query("partNumber=2&uploadId=x"), "partNumber=2&uploadId=x");  // upper case sorts first
}

TEST(RenewingCredentials, RenewedAQuarterOfTheirLifetimeBeforeExpiryAtMostFifteenMinutes) {
  const auto now = Clock::now();
  EXPECT_EQ(RenewingCredentials::renewal_time(now, now + 1h), now + 45min);
  EXPECT_EQ(RenewingCredentials::renewal_time(now, now + 12h), now + 12h - 15min);
  EXPECT_EQ(RenewingCredentials::renewal_time(now, now + 60s), now + 45s);
}

AwsCredentials credentials(const std::string& id, Clock::duration lifetime) {
  return {id, "secret-" + id, "token-" + id, "test", Clock::now() + lifetime};
}

TEST(RenewingCredentials, ServeUntilTheirWindowThenRenewAndKeepServingWhileARenewalFails) {
  std::atomic<int> fetches = 0;
  bool endpoint_up = true;
  RenewingCredentials renewing(credentials("first", 1h), [&]() -> std::optional<AwsCredentials> {
    ++fetches;
    if (!endpoint_up) return std::nullopt;
    return credentials("fetched" + std::to_string(fetches.load()), 1h);
  });
  EXPECT_EQ(renewing.current()->access_key_id, "first");
  EXPECT_EQ(fetches, 0) << "not renewed outside the window";

  renewing.expire();  // the service said ExpiredToken
  EXPECT_EQ(renewing.current()->access_key_id, "fetched1");
  EXPECT_EQ(renewing.current()->access_key_id, "fetched1");
  EXPECT_EQ(fetches, 1);

  endpoint_up = false;  // a failed renewal keeps the current ones while they still work
  renewing.expire();
  EXPECT_EQ(renewing.current()->access_key_id, "fetched1");
  EXPECT_EQ(fetches, 2);
}

TEST(RenewingCredentials, ExpiredAndNotRenewableIsRetryLaterNotAConfigError) {
  RenewingCredentials renewing(credentials("old", 2s), [] { return std::optional<AwsCredentials>(); });
  auto got = renewing.current();
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().kind, ErrorKind::kUnavailable) << got.error().message;
  EXPECT_EQ(got.error().message.find("secret-old"), std::string::npos);
}

TEST(RenewingCredentials, OneSetPerOriginForTheWholeProcess) {
  auto fetch = [] { return std::optional<AwsCredentials>(); };
  auto a = shared_renewing_credentials("origin-a", credentials("a", 1h), fetch);
  auto b = shared_renewing_credentials("origin-a", credentials("b", 1h), fetch);
  auto c = shared_renewing_credentials("origin-c", credentials("c", 1h), fetch);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(b->current()->access_key_id, "a");
}

// Container credentials the gate hands out; the gate then expires them early. The next S3 PUT and DynamoDB call are
// refused once as expired, renew, and succeed; the expired request was never acted on.
TEST(TemporaryCredentials, ARefusalAsExpiredRenewsAndSendsOnceMore) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("renew");
  std::vector<std::unique_ptr<skippr::testing::ScopedEnv>> vars;
  for (const auto& [name, value] : moto.container_credentials_env()) {
    vars.push_back(std::make_unique<skippr::testing::ScopedEnv>(name, value));
  }
  auto s3_service = resolve_aws_service({}, "s3", "test");
  ASSERT_TRUE(s3_service) << s3_service.error().message;
  ASSERT_TRUE(s3_service->renewing) << "container credentials expire, so they renew";
  auto dynamodb_service = resolve_aws_service({}, "dynamodb", "test");
  ASSERT_TRUE(dynamodb_service) << dynamodb_service.error().message;
  EXPECT_EQ(s3_service->renewing.get(), dynamodb_service->renewing.get()) << "one set shared by both clients";

  S3Client s3(*s3_service);
  ASSERT_TRUE(s3.put_object_if_absent(bucket, "a", "1", "text/plain"));
  const AwsJsonApi dynamodb{"DynamoDB", "dynamodb", "DynamoDB_20120810", "application/x-amz-json-1.0"};
  ASSERT_TRUE(aws_json_call(*dynamodb_service, dynamodb, "ListTables", nlohmann::json::object(), true));

  moto.reset_gate_stats();
  ASSERT_GE(moto.expire_temporary_keys(), 1);
  auto put = s3.put_object_if_absent(bucket, "b", "2", "text/plain");
  ASSERT_TRUE(put) << put.error().message;
  EXPECT_EQ(*put, PutOutcome::kCreated);
  auto listed = aws_json_call(*dynamodb_service, dynamodb, "ListTables", nlohmann::json::object(), true);
  ASSERT_TRUE(listed) << listed.error().message;
  auto keys = s3.list_objects(bucket, "");
  ASSERT_TRUE(keys) << keys.error().message;
  EXPECT_EQ(keys->size(), 2u);

  const auto stats = moto.gate_stats();
  EXPECT_EQ(stats.at("refused").value("ExpiredToken", 0), 1) << stats.dump(2);
  EXPECT_EQ(stats.at("refused").size(), 1u) << stats.dump(2);
}

}  // namespace
}  // namespace skippr::test
