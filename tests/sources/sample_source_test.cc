// The Sample source: deterministic by (seed, row), exact resume from its position, the documented columns.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "core/connector.h"
#include "formats/json_rows.h"

namespace skippr {
namespace {

std::unique_ptr<Source> make_sample(int64_t rows, int64_t seed = 1) {
  ConnectorContext ctx;
  ctx.name = "sample";
  ctx.params = {{"rows", rows}, {"seed", seed}, {"start_at", "2024-01-01T00:00:00Z"}};
  auto source = find_connector("Sample", true)->make_source(ctx);
  EXPECT_TRUE(source) << source.error().message;
  return std::move(*source);
}

// Reads everything, polling with the given row budgets in turn, and returns every row as a JSON line.
std::vector<std::string> read_all(Source& source, std::vector<size_t> budgets, Position* last = nullptr) {
  std::vector<std::string> rows;
  for (size_t i = 0;; ++i) {
    Budget budget;
    budget.max_rows = budgets[i % budgets.size()];
    auto poll = source.poll(budget);
    EXPECT_TRUE(poll);
    for (size_t r = 0; r < poll->records.rows; ++r) rows.push_back(row_to_json(poll->records, r));
    if (last) *last = poll->position_after;
    if (poll->drained) return rows;
  }
}

TEST(SampleSource, HasTheDocumentedColumnsAndEventCycle) {
  auto source = make_sample(8);
  ASSERT_TRUE(source->seek({}));
  auto poll = source->poll(Budget{});
  ASSERT_TRUE(poll);
  const Batch& b = poll->records;
  ASSERT_EQ(b.rows, 8u);
  EXPECT_TRUE(poll->drained);
  const std::vector<std::pair<std::string, Type>> expected = {
      {"trip_id", Type::kInt64},        {"rider_id", Type::kInt64}, {"bike_id", Type::kInt64},
      {"event_type", Type::kString},    {"event_time", Type::kTimestamp}, {"station", Type::kString},
      {"duration_s", Type::kDouble},    {"firmware", Type::kString}, {"metadata", Type::kJson}};
  ASSERT_EQ(b.schema.fields.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(b.schema.fields[i].name, expected[i].first);
    EXPECT_EQ(b.schema.fields[i].type, expected[i].second) << expected[i].first;
  }
  const char* cycle[] = {"trip_start", "pause", "resume", "trip_end"};
  for (size_t r = 0; r < 8; ++r) {
    EXPECT_EQ(b.columns[0].int_at(r), static_cast<int64_t>(r + 1));
    EXPECT_EQ(b.columns[3].string_at(r), cycle[r % 4]);
  }
  // The four events of one trip share rider and bike; time moves forward.
  EXPECT_EQ(b.columns[1].int_at(0), b.columns[1].int_at(3));
  EXPECT_EQ(b.columns[2].int_at(0), b.columns[2].int_at(3));
  EXPECT_LT(b.columns[4].int_at(0), b.columns[4].int_at(1));
  EXPECT_EQ(b.columns[8].string_at(0).front(), '{');
}

TEST(SampleSource, PollSizesDoNotChangeTheRows) {
  auto a = make_sample(10000, 5), b = make_sample(10000, 5), c = make_sample(10000, 6);
  for (auto* s : {a.get(), b.get(), c.get()}) ASSERT_TRUE(s->seek({}));
  auto rows_a = read_all(*a, {10000});
  auto rows_b = read_all(*b, {1, 7, 333, 4096});
  auto rows_c = read_all(*c, {10000});
  ASSERT_EQ(rows_a.size(), 10000u);
  EXPECT_EQ(rows_a, rows_b);
  EXPECT_NE(rows_a, rows_c);
}

TEST(SampleSource, ResumesExactlyAfterItsPosition) {
  auto straight = make_sample(5000, 9);
  ASSERT_TRUE(straight->seek({}));
  const auto all = read_all(*straight, {5000});

  auto first = make_sample(5000, 9);
  ASSERT_TRUE(first->seek({}));
  Budget budget;
  budget.max_rows = 1234;
  auto poll = first->poll(budget);
  ASSERT_TRUE(poll);
  ASSERT_FALSE(poll->drained);

  auto resumed = make_sample(5000, 9);  // a new process: only the position survives
  ASSERT_TRUE(resumed->seek(poll->position_after));
  auto rest = read_all(*resumed, {1000});
  ASSERT_EQ(rest.size(), 5000u - 1234u);
  EXPECT_EQ(rest.front(), all[1234]);
  EXPECT_EQ(rest.back(), all.back());
}

TEST(SampleSource, RejectsAnUnreadablePositionAndABadStartTime) {
  auto source = make_sample(10);
  auto st = source->seek(Position{"not json"});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::kCorruption);
  ConnectorContext ctx;
  ctx.name = "sample";
  ctx.params = {{"rows", 10}, {"seed", 1}, {"start_at", "yesterday"}};
  auto bad = find_connector("Sample", true)->make_source(ctx);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kConfig);
  EXPECT_NE(bad.error().message.find("yesterday"), std::string::npos);
}

TEST(SampleSource, GeneratesMillionsOfRowsPerSecond) {
  auto source = make_sample(3000000);
  ASSERT_TRUE(source->seek({}));
  const auto start = std::chrono::steady_clock::now();
  uint64_t rows = 0;
  for (bool drained = false; !drained;) {
    auto poll = source->poll(Budget{});
    ASSERT_TRUE(poll);
    rows += poll->records.rows;
    drained = poll->drained;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(rows, 3000000u);
  // Reported, not asserted: timings belong in bench/, and this machine's cores are shared.
  std::cout << "Sample generated " << rows << " rows in " << seconds << " s (" << rows / seconds << " rows/s)\n";
}

}  // namespace
}  // namespace skippr
