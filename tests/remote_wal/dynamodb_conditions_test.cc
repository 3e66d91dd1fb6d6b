// The DynamoDB double the lease tests run on is as strict as DynamoDB where the lease depends on it: a conditional
// write is atomic. moto alone applied two UpdateItems carrying the same lease-token condition side by side (8 of 83
// takeovers once), so two processes held one token; through the gate (which passes DynamoDB calls one at a time)
// every round of racing takeovers has exactly one winner.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <thread>
#include <vector>

#include "clients/aws/aws_json.h"
#include "support/moto_server.h"

namespace skippr::test {
namespace {

const AwsJsonApi kDynamoDb{"DynamoDB", "dynamodb", "DynamoDB_20120810", "application/x-amz-json-1.0"};

TEST(DynamoDbDouble, RacingConditionalTakeoversHaveExactlyOneWinnerEachRound) {
  auto& moto = SharedMoto();
  moto.reset_gate_stats();
  const AwsService service{"us-east-1", moto.endpoint(), true, {"testing", "testing", "", "test"}};
  const std::string table = "lease-race";
  ASSERT_TRUE(aws_json_call(service, kDynamoDb, "CreateTable",
                            {{"TableName", table},
                             {"AttributeDefinitions", {{{"AttributeName", "pk"}, {"AttributeType", "S"}}}},
                             {"KeySchema", {{{"AttributeName", "pk"}, {"KeyType", "HASH"}}}},
                             {"BillingMode", "PAY_PER_REQUEST"}},
                            false));
  ASSERT_TRUE(aws_json_call(service, kDynamoDb, "PutItem",
                            {{"TableName", table}, {"Item", {{"pk", {{"S", "lease"}}}, {"token", {{"N", "0"}}}}}},
                            false));
  constexpr int kRounds = 30, kContenders = 8;
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> winners = 0, refused = 0, failed = 0;
    std::vector<std::thread> contenders;
    for (int c = 0; c < kContenders; ++c) {
      contenders.emplace_back([&, c] {
        // Every contender read token `round` and takes the lease over with a token of its own.
        const nlohmann::json request = {{"TableName", table},
                                        {"Key", {{"pk", {{"S", "lease"}}}}},
                                        {"UpdateExpression", "SET #t = :next, holder = :me"},
                                        {"ConditionExpression", "#t = :seen"},
                                        {"ExpressionAttributeNames", {{"#t", "token"}}},
                                        {"ExpressionAttributeValues",
                                         {{":seen", {{"N", std::to_string(round)}}},
                                          {":next", {{"N", std::to_string(round + 1)}}},
                                          {":me", {{"S", fmt::format("contender-{}", c)}}}}}};
        auto r = aws_json_call(service, kDynamoDb, "UpdateItem", request, false, {"ConditionalCheckFailedException"});
        if (!r) {
          ++failed;
        } else if (r->error_type.empty()) {
          ++winners;
        } else {
          ++refused;
        }
      });
    }
    for (auto& t : contenders) t.join();
    ASSERT_EQ(failed, 0) << "round " << round;
    EXPECT_EQ(winners, 1) << "round " << round << ": two processes would hold one lease";
    EXPECT_EQ(refused, kContenders - 1) << "round " << round;
  }
  moto.expect_every_request_accepted();
}

}  // namespace
}  // namespace skippr::test
