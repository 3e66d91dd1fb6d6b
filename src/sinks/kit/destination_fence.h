// Fencing at the destination, for warehouses whose executions outlive the process that sent them (a Snowflake
// statement or a BigQuery job runs, and commits, after its client is killed). A fence table beside the target
// (`<table>__skippr_fence`) holds one row per pipeline naming the lineage that may land there:
// - every landing transaction starts with FenceSql::hold, an UPDATE of that row, and every write in it carries
//   FenceSql::held for its batch's lineage. The UPDATE makes two landing transactions exclusive of each other:
//   Snowflake queues the second behind the first's table lock, BigQuery cancels one of them. A statement of a READ
//   COMMITTED engine that runs after the wait sees what the first committed, so its ledger condition holds it back;
// - a run that starts without DATA_DIR (a new lineage) takes the row over (FenceSql::take) before it reads the ledger.
//   That UPDATE waits for, or conflicts with, every landing still executing; once it has committed, a landing of the
//   old lineage that starts later writes nothing, so the ledger's tip read afterwards is final.
// Databricks needs none of this (its landing files serve: see the Databricks sink).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sinks/kit/batch_ledger.h"

namespace skippr {

inline constexpr std::string_view kFenceSuffix = "__skippr_fence";

struct FenceSql {
  LedgerDialect d;
  std::string table;   // the fence table, qualified and quoted
  std::string target;  // as the ledger names it; a sink of several streams: its table pattern, named so
  std::string pipeline;
  // A sink of several streams: the LIKE pattern of its tables' ledger names (StreamTables::target_like). Whether the
  // pipeline landed a batch, and of which lineage, is then asked of every one of them.
  std::string target_like;

  std::string create() const;
  // The first statement of every landing transaction (whatever its lineage: the lock is what matters).
  std::string hold() const;
  // A condition (for a WHERE) true while `lineage` holds the fence.
  std::string held(std::string_view lineage) const;
  // A new lineage takes the fence: an UPDATE, then claim() for a pipeline that has no row yet.
  std::string take(std::string_view lineage) const;
  // Makes the row for `lineage` unless the pipeline has one: a MERGE, which Snowflake and BigQuery serialise with
  // other writes of the table (two INSERTs ... WHERE NOT EXISTS would both insert).
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

// `query(sql)` returning a Result of something with `rows`, as a FenceClient's read.
template <class Query>
std::function<Result<SqlRows>(const std::string&)> fence_reader(Query query) {
  return [query](const std::string& sql) -> Result<SqlRows> {
    auto done = query(sql);
    if (!done) return std::unexpected(done.error());
    return std::move(done->rows);
  };
}

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
  Status hold(const BatchId& id);
  // The condition of every write of `id`'s landing: not in the ledger yet, and (with a lineage) its lineage holds the
  // fence.
  std::string unlanded(const BatchId& id) const { return unlanded(id, sql_.target); }
  // The same for a landing in `target` (as the ledger names it): one stream's table.
  std::string unlanded(const BatchId& id, std::string_view target) const;
  // After a landing committed: its ledger row is there, else the lineage had lost the fence and it wrote nothing
  // (kFenced, naming the lineage holding it now).
  Status confirm_landed(const BatchId& id) { return confirm_landed(id, sql_.target); }
  Status confirm_landed(const BatchId& id, std::string_view target);
  Status fenced_out(std::string_view lineage);
  // The lineage this process holds the fence for ("" before the first landing).
  const std::string& held() const { return held_; }

 private:
  FenceSql sql_;
  FenceClient client_;
  std::string where_;
  std::string held_;  // the lineage this process holds the fence for ("" before the first landing)
};

}  // namespace skippr
