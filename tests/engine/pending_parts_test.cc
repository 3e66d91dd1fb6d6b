// The read stage's batch of several streams (engine/pending_parts.h): one part per stream in arrival order, rows and
// bytes counted across parts, and a refused append changes nothing.
#include "engine/pending_parts.h"

#include <gtest/gtest.h>

namespace skippr {
namespace {

Batch rows_of_stream(const std::string& stream, const std::string& field, Type type, int rows) {
  Batch b;
  b.stream = stream;
  b.add_column({field, type});
  for (int i = 0; i < rows; ++i) {
    type == Type::kString ? b.columns[0].append_string("v" + std::to_string(i)) : b.columns[0].append_int(i);
  }
  b.rows = static_cast<size_t>(rows);
  return b;
}

TEST(PendingParts, KeepsOnePartPerStreamInArrivalOrder) {
  PendingParts pending;
  EXPECT_TRUE(pending.add(rows_of_stream("b", "x", Type::kInt64, 3)));
  EXPECT_TRUE(pending.add(rows_of_stream("a", "y", Type::kString, 2)));
  EXPECT_TRUE(pending.add(rows_of_stream("b", "x", Type::kInt64, 4)));
  EXPECT_EQ(pending.rows(), 9u);
  EXPECT_EQ(pending.streams(), 2u);
  const size_t bytes = pending.byte_size();
  auto parts = pending.take();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].stream, "b");
  EXPECT_EQ(parts[0].rows, 7u);
  EXPECT_EQ(parts[1].stream, "a");
  EXPECT_EQ(bytes, parts[0].byte_size() + parts[1].byte_size());
  EXPECT_EQ(pending.rows(), 0u);
  EXPECT_EQ(pending.byte_size(), 0u);
}

TEST(PendingParts, ABatchWithoutRowsIsOneEmptyPartOfTheUnnamedStream) {
  PendingParts pending;
  EXPECT_TRUE(pending.add(Batch{}));
  auto parts = pending.take();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].stream, "");
  EXPECT_EQ(parts[0].rows, 0u);
}

TEST(PendingParts, RecordsThatDoNotFitTheirStreamArePointedOutAndChangeNothing) {
  PendingParts pending;
  ASSERT_TRUE(pending.add(rows_of_stream("a", "x", Type::kInt64, 2)));
  const Batch other_type = rows_of_stream("a", "x", Type::kString, 1);
  EXPECT_FALSE(pending.fits(other_type));
  EXPECT_TRUE(pending.fits(rows_of_stream("b", "x", Type::kString, 1))) << "another stream has its own fields";
  Batch copy = other_type;
  EXPECT_FALSE(pending.add(std::move(copy)));
  EXPECT_EQ(pending.rows(), 2u);
  EXPECT_EQ(pending.take().front().schema.fields[0].type, Type::kInt64);
}

}  // namespace
}  // namespace skippr
