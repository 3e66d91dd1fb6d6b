#include "wal/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace skippr::crc32c {
namespace {

TEST(Crc32c, MatchesTheStandardCheckValue) {
  EXPECT_EQ(value("123456789"), 0xE3069283u);
  EXPECT_EQ(extend_portable(0, "123456789", 9), 0xE3069283u);
  if (has_sse42()) {
    EXPECT_EQ(extend_sse42(0, "123456789", 9), 0xE3069283u);
  }
}

TEST(Crc32c, KnownVectorsFromRfc3720) {
  EXPECT_EQ(value(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(value(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(value(""), 0u);
}

TEST(Crc32c, HardwareAndTableAgreeOnEveryLengthAndAlignment) {
  if (!has_sse42()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937_64 rng(42);
  std::string data(300, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len = 0; start + len <= data.size(); len += 7) {
      ASSERT_EQ(extend_sse42(0, data.data() + start, len), extend_portable(0, data.data() + start, len))
          << start << "+" << len;
    }
  }
}

TEST(Crc32c, ExtendingInPiecesEqualsTheWhole) {
  const std::string whole = "the quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= whole.size(); ++cut) {
    EXPECT_EQ(extend(extend(0, whole.data(), cut), whole.data() + cut, whole.size() - cut), value(whole));
  }
}

}  // namespace
}  // namespace skippr::crc32c
