// SKIPPR_STATE_STORE=dynamodb: a pipeline's state is one item of SKIPPR_STATE_DYNAMODB_TABLE (partition key
// "pipeline"), read strongly consistent and changed only by conditional writes, so any machine can run any pipeline
// and none needs its DATA_DIR. The item also holds the fenced lease (owner, expiry, a token that only grows) and the
// WAL's commit record (WAL_STORAGE=s3): every commit and landed mark is conditional on the lease's token.
// Statistics are a second item, "<pipeline>/stats".
#pragma once

#include <memory>
#include <string>

#include "clients/aws/aws_config.h"
#include "state/state_store.h"

namespace skippr {

struct DynamoDbStateOptions {
  AwsService service;
  std::string table;
  std::string pipeline;
  double lease_seconds = 30;  // SKIPPR_LEASE_SECONDS: how long a lease lasts without renewal
  double retry_seconds = 60;  // how long a write that fails for a transient reason is retried
};

// Checks the table, creating it (on-demand capacity) when it is absent.
Result<std::unique_ptr<StateStore>> open_dynamodb_state_store(const DynamoDbStateOptions& options);

}  // namespace skippr
