#include "core/natural_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace skippr {
namespace {

TEST(NaturalOrder, DigitRunsCompareAsNumbers) {
  std::vector<std::string> names = {"p10", "p2", "p1", "p0", "orders", "p100", "p01", "p9x", "p9", "a"};
  std::ranges::sort(names, natural_less);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "orders", "p0", "p1", "p01", "p2", "p9", "p9x", "p10", "p100"}));
}

TEST(NaturalOrder, IsAStrictOrder) {
  EXPECT_FALSE(natural_less("p1", "p1"));
  EXPECT_TRUE(natural_less("p", "p1"));
  EXPECT_FALSE(natural_less("p1", "p"));
  EXPECT_TRUE(natural_less("x99999999999999999999999", "x100000000000000000000000"));
}

}  // namespace
}  // namespace skippr
