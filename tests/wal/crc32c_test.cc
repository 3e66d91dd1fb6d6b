#include "core/crc32c.h"

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

TEST(Crc32c, CombineEqualsADirectChecksumOfTheConcatenation) {
  std::mt19937_64 rng(7);
  // Every split of a short string (lengths 0..300 exercise each bit of the small counts), then large, odd-sized
  // tails as the WAL has them (a few MiB of columns behind a short metadata head).
  std::string data(300, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    const std::string_view a(data.data(), cut), b(data.data() + cut, data.size() - cut);
    ASSERT_EQ(combine(value(a), value(b), b.size()), value(data)) << cut;
  }
  for (size_t tail_bytes : {size_t{1} << 20, (size_t{8} << 20) + 12345, size_t{3} * 1000 * 1000 + 1}) {
    std::string big(tail_bytes + 77, '\0');
    for (char& c : big) c = static_cast<char>(rng());
    const std::string_view head(big.data(), 77), tail(big.data() + 77, tail_bytes);
    EXPECT_EQ(combine(value(head), value(tail), tail.size()), value(big)) << tail_bytes;
  }
  // A checksum of zeros is not the identity: the lengths must matter.
  EXPECT_NE(combine(value("ab"), value(std::string(5, '\0')), 5), combine(value("ab"), value(std::string(6, '\0')), 6));
}

}  // namespace
}  // namespace skippr::crc32c
