// Fencing at the destination, for warehouses whose executions outlive the process that sent them (a Snowflake
// statement or a BigQuery job runs, and commits, after its client is killed). One row per (target, pipeline) names
// the lineage that may land there:
// - every landing transaction starts with fence_hold_sql, an UPDATE of that row conditional on its own lineage, and
//   every write in it carries fence_held_condition. The UPDATE makes two transactions that land into one target
//   exclusive of each other: Snowflake queues the second behind the first's table lock, BigQuery and Delta abort one
//   of them. A statement of a READ COMMITTED engine that runs after the wait then sees what the first committed, so
//   its ledger condition holds it back;
// - a run that starts without DATA_DIR (a new lineage) first takes the row over (fence_take_sql). That UPDATE waits
//   for, or conflicts with, every landing of the old lineage still executing; once it has committed, an old execution
//   that starts later finds the row no longer its own and writes nothing, so the ledger tip read afterwards is final.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sinks/batch_ledger.h"

namespace skippr {

inline constexpr std::string_view kFenceTable = "_skippr_fence";

struct FenceSql {
  LedgerDialect d;
  std::string target;  // as the ledger names it
  std::string pipeline;

  std::string create() const;
  // The first statement of a landing transaction of `lineage`.
  std::string hold(std::string_view lineage) const;
  // A condition (for a WHERE) true while `lineage` holds the fence.
  std::string held(std::string_view lineage) const;
  // A new lineage takes the fence: an UPDATE, then claim() for a target that has none yet.
  std::string take(std::string_view lineage) const;
  // Inserts the row for `lineage` unless the target has one already.
  std::string claim(std::string_view lineage) const;
  // One row, the lineage holding the fence; none when there is no fence yet.
  std::string owner() const;
};

using SqlRows = std::vector<std::vector<std::optional<std::string>>>;

// How a sink runs the fence's statements: `read` a query's rows, `write` one statement outside a transaction (a sink
// whose warehouse may refuse it for a concurrent transaction sends it again there).
struct FenceClient {
  std::function<Result<SqlRows>(const std::string&)> read;
  std::function<Status(const std::string&)> write;
};

// The fence, as one sink process uses it: which lineage it holds, and the decisions around that.
class DestinationFence {
 public:
  DestinationFence(FenceSql sql, FenceClient client, std::string where)
      : sql_(std::move(sql)), client_(std::move(client)), where_(std::move(where)) {}
  const FenceSql& sql() const { return sql_; }

  // Sink::take_over: the row goes to `lineage`, waiting for (or conflicting with) every landing still executing.
  Status take(std::string_view lineage);
  // Before the first landing of a batch of `id`'s lineage in this process: the fence is that lineage's, or nobody's
  // yet (claimed), or a RESET's (a new lineage whose epoch is above every batch of the pipeline in the ledger: it
  // takes the fence). Otherwise another run took the target over: kFenced. Batches of the legacy empty lineage are
  // not fenced.
  Status hold(const BatchId& id, const LedgerDialect& ledger);
  // kFenced naming the lineage that holds the fence now: for a landing that committed without its ledger row.
  Status fenced_out(std::string_view lineage);
  // The lineage this process holds the fence for ("" before the first landing).
  const std::string& held() const { return held_; }

 private:
  FenceSql sql_;
  FenceClient client_;
  std::string where_;
  std::string held_;
};

}  // namespace skippr
