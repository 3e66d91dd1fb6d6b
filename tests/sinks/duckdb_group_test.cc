// Coalesced landing into DuckDB (Sink::write_group): one transaction for a group, a ledger row per batch, batches
// the ledger holds skipped one by one, and all or nothing when something fails inside the group.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/failpoint.h"
#include "sink_test_util.h"
#include "sinks/duckdb/duckdb_sink.h"

namespace skippr {
namespace {

using testing::scalar;
using testing::TempDir;

std::unique_ptr<Sink> make_sink(const std::filesystem::path& path) {
  ConnectorContext ctx;
  ctx.name = "warehouse";
  ctx.pipeline = "p";
  ctx.params = {{"path", path.string()}, {"table", "t"}};
  auto sink = duckdb_sink_spec().make_sink(ctx);
  EXPECT_TRUE(sink) << sink.error().message;
  return sink ? std::move(*sink) : nullptr;
}

struct FailpointReset {
  ~FailpointReset() { failpoint::set_handler(nullptr); }
};

TEST(DuckDbGroup, AGroupSkipsTheBatchesTheLedgerHoldsAndLandsTheRestOnce) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  const Batch first = testing::simple_batch(3, 0);
  const Batch second = testing::simple_batch(4, 100);
  Batch third = testing::simple_batch(2, 200);  // one field more: the table gains a column inside the group
  third.add_column({"extra", Type::kString});
  third.columns[3] = Column(Type::kString);
  third.columns[3].append_string("e200");
  third.columns[3].append_null();
  const BatchId id1{"p", 1, 1}, id2{"p", 1, 2}, id3{"p", 1, 3};
  const Position pos1{"after-1"}, pos2{"after-2"}, pos3{"after-3"};
  {
    auto sink = make_sink(db);
    ASSERT_TRUE(sink->lands_groups());
    // The second batch landed alone earlier (a run killed after its commit, before its LANDED mark).
    ASSERT_EQ(sink->write(second, id2, pos2).value(), WriteOutcome::kApplied);
    const BatchToLand group[] = {{first, id1, pos1}, {second, id2, pos2}, {third, id3, pos3}};
    auto landed = sink->write_group(group);
    ASSERT_TRUE(landed) << landed.error().message;
    ASSERT_EQ(landed->size(), 3u);
    EXPECT_EQ((*landed)[0].outcome, WriteOutcome::kApplied);
    EXPECT_EQ((*landed)[1].outcome, WriteOutcome::kAlreadyApplied);
    EXPECT_EQ((*landed)[2].outcome, WriteOutcome::kApplied);
    // The same group again: nothing to write.
    auto again = sink->write_group(group);
    ASSERT_TRUE(again) << again.error().message;
    for (const auto& b : *again) EXPECT_EQ(b.outcome, WriteOutcome::kAlreadyApplied);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) || ' ' || count(DISTINCT id) FROM t"), "9 9");
  EXPECT_EQ(scalar(db, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t WHERE extra IS NOT NULL"), "200");
  EXPECT_EQ(scalar(db,
                   "SELECT string_agg(seq || ':' || \"rows\" || ':' || position_after, ',' ORDER BY seq) FROM "
                   "_skippr_batches"),
            "1:3:after-1,2:4:after-2,3:2:after-3");
}

TEST(DuckDbGroup, AFailureInsideAGroupLeavesNoneOfItsBatches) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  const Batch a = testing::simple_batch(5, 0), b = testing::simple_batch(5, 10), c = testing::simple_batch(5, 20);
  const BatchId ida{"p", 1, 1}, idb{"p", 1, 2}, idc{"p", 1, 3};
  const Position none;
  const BatchToLand group[] = {{a, ida, none}, {b, idb, none}, {c, idc, none}};
  {
    auto sink = make_sink(db);
    {
      FailpointReset reset;
      // Between the second batch and the third: two batches' rows and ledger rows are in the transaction.
      static int passes = 0;
      passes = 0;
      failpoint::set_handler([](std::string_view name) {
        if (name == failpoint::kSinkInGroup && ++passes == 2) throw std::runtime_error("injected inside the group");
      });
      EXPECT_THROW((void)sink->write_group(group), std::runtime_error);
    }
    EXPECT_EQ(sink->ledger_tip().value(), std::nullopt) << "no batch of the failed group may be in the ledger";
    // The retry (the same ids, grouped differently) lands every batch once.
    ASSERT_EQ(sink->write(a, ida, none).value(), WriteOutcome::kApplied);
    auto landed = sink->write_group(group);
    ASSERT_TRUE(landed) << landed.error().message;
    EXPECT_EQ((*landed)[0].outcome, WriteOutcome::kAlreadyApplied);
    EXPECT_EQ((*landed)[1].outcome, WriteOutcome::kApplied);
    EXPECT_EQ((*landed)[2].outcome, WriteOutcome::kApplied);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) || ' ' || count(DISTINCT id) FROM t"), "15 15");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM _skippr_batches"), "3");
}

TEST(DuckDbGroup, RejectedRowsAreCountedPerBatch) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  const Batch good = testing::simple_batch(3, 0);
  Batch mixed;  // `id` as text: "7" converts, "x" is rejected
  mixed.add_column({"id", Type::kString});
  for (const char* id : {"7", "x"}) {
    mixed.columns[0].append_string(id);
    ++mixed.rows;
  }
  const BatchId id1{"p", 1, 1}, id2{"p", 1, 2}, id3{"p", 1, 3};
  const Position none;
  const BatchToLand group[] = {{good, id1, none}, {mixed, id2, none}, {good, id3, none}};
  {
    auto sink = make_sink(db);
    // The table exists with id BIGINT before the group, so the text ids have a column type to meet.
    ASSERT_TRUE(sink->write(testing::simple_batch(1, 1000), BatchId{"p", 1, 0}));
    auto landed = sink->write_group(group);
    ASSERT_TRUE(landed) << landed.error().message;
    EXPECT_EQ((*landed)[0].rows_rejected, 0u);
    EXPECT_EQ((*landed)[1].rows_rejected, 1u);
    EXPECT_EQ((*landed)[2].rows_rejected, 0u);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "8");
  EXPECT_EQ(scalar(db, "SELECT batch_id FROM t__skippr_rejected"), "p/1/2");
}

}  // namespace
}  // namespace skippr
