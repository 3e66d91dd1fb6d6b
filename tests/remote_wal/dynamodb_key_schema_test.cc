// A SKIPPR_STATE_DYNAMODB_TABLE that exists with other keys is a configuration error naming the keys it has and the
// one skipprd needs, before anything is read. Before, DynamoDB's own ValidationException ("The provided key element
// does not match the schema") came out of the first read.
#include <gtest/gtest.h>

#include "clients/aws/aws_json.h"
#include "remote_wal/remote_test_env.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

const AwsJsonApi kDynamoDb{"DynamoDB", "dynamodb", "DynamoDB_20120810", "application/x-amz-json-1.0"};

TEST(DynamoDbStateTable, ATableWithOtherKeysIsExitTwoNamingTheKeyNeeded) {
  auto env = remote_storage_env();
  const AwsService service{"us-east-1", SharedMoto().endpoint(), true, {"testing", "testing", "", "test"}};
  const std::string table = env.at("SKIPPR_STATE_DYNAMODB_TABLE") + "-other-keys";
  ASSERT_TRUE(aws_json_call(
      service, kDynamoDb, "CreateTable",
      {{"TableName", table},
       {"AttributeDefinitions",
        {{{"AttributeName", "pk"}, {"AttributeType", "S"}}, {{"AttributeName", "sk"}, {"AttributeType", "N"}}}},
       {"KeySchema", {{{"AttributeName", "pk"}, {"KeyType", "HASH"}}, {{"AttributeName", "sk"}, {"KeyType", "RANGE"}}}},
       {"BillingMode", "PAY_PER_REQUEST"}},
      false));
  env["SKIPPR_STATE_DYNAMODB_TABLE"] = table;
  PipelineFixture f(sample_to_duckdb_config(100));
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the table exists with the partition key 'pk' (S) and the sort key 'sk' (N), but skipprd "
                       "keeps its items under one string partition key named 'pipeline'"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(f.path("out.duckdb"))) << "something was landed";
}

}  // namespace
}  // namespace skippr::test
