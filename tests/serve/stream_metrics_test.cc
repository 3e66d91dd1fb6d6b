// /metrics of a pipeline of several streams: one series of rows landed per stream, its name an escaped label.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/metrics.h"

namespace skippr {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(StreamMetrics, EachStreamHasASeriesOfItsRowsLanded) {
  MetricsRegistry registry;
  RunTotals totals;
  totals.rows_landed = 7;
  totals.stream_rows_landed = {{"public.orders", 5}, {"odd\"name", 2}};
  auto many = registry.add("many", [&] { return totals; });
  auto one = registry.add("one", [] { return RunTotals{}; });
  const std::string text = registry.render();
  EXPECT_THAT(text, HasSubstr("# TYPE skippr_stream_rows_landed_total counter\n"));
  EXPECT_THAT(text, HasSubstr("skippr_stream_rows_landed_total{pipeline=\"many\",stream=\"public.orders\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("skippr_stream_rows_landed_total{pipeline=\"many\",stream=\"odd\\\"name\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("skippr_stream_rows_landed_total{pipeline=\"one\"")));  // one stream: no series
}

}  // namespace
}  // namespace skippr
