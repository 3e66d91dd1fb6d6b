#include "wal/batch_codec.h"

#include <gtest/gtest.h>

#include "wal/wal_test_util.h"

namespace skippr::wal {
namespace {

using skippr::testing::batch_with_every_type;
using skippr::testing::expect_batches_equal;

TEST(BatchCodec, RoundTripsEveryTypeWithNulls) {
  const Batch original = batch_with_every_type(100, 1);
  ASSERT_FALSE(original.columns[0].validity.empty()) << "the fixture must contain nulls";
  auto compressed = compress_batch(original, 3);
  ASSERT_TRUE(compressed) << compressed.error().message;
  auto decoded = decompress_batch(*compressed);
  ASSERT_TRUE(decoded) << decoded.error().message;
  expect_batches_equal(original, *decoded);
}

TEST(BatchCodec, RoundTripsAllValidAndEmptyBatches) {
  Batch all_valid;
  all_valid.add_column({"id", Type::kInt64});
  all_valid.add_column({"s", Type::kString});
  for (int i = 0; i < 5; ++i) {
    all_valid.columns[0].append_int(i);
    all_valid.columns[1].append_string(std::string(static_cast<size_t>(i), 'x'));
  }
  all_valid.rows = 5;
  for (const Batch& original : {all_valid, batch_with_every_type(0, 0), Batch{}}) {
    auto decoded = decompress_batch(*compress_batch(original, 1));
    ASSERT_TRUE(decoded) << decoded.error().message;
    expect_batches_equal(original, *decoded);
  }
}

TEST(BatchCodec, RejectsTruncatedOrTrailingBytes) {
  const std::string raw = serialize_batch(batch_with_every_type(10, 2));
  ASSERT_TRUE(deserialize_batch(raw));
  for (size_t cut : {size_t{0}, size_t{3}, raw.size() / 2, raw.size() - 1}) {
    auto decoded = deserialize_batch(std::string_view(raw).substr(0, cut));
    ASSERT_FALSE(decoded) << "cut at " << cut;
    EXPECT_EQ(decoded.error().kind, ErrorKind::kCorruption);
  }
  EXPECT_FALSE(deserialize_batch(raw + "x"));
}

TEST(BatchCodec, RefusesAnInconsistentBatchAtCommitTime) {
  Batch b = batch_with_every_type(4, 0);
  b.rows = 5;  // columns hold 4 rows
  auto compressed = compress_batch(b, 1);
  ASSERT_FALSE(compressed);
  EXPECT_EQ(compressed.error().kind, ErrorKind::kInternal);
}

}  // namespace
}  // namespace skippr::wal
