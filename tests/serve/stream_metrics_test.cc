// A pipeline of several streams in /metrics (one series of rows landed per stream, its name an escaped label), on the
// status page (each stream's rows, folded under the total) and in /api/status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve/metrics.h"
#include "serve/status_page.h"

namespace skippr {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(StreamMetrics, EachStreamHasASeriesOfItsRowsLanded) {
  MetricsRegistry registry;
  RunTotals totals;
  totals.rows_landed = 7;
  totals.stream_rows_landed = {{"public.orders", 5}, {"odd\"name", 2}};
  totals.stream_rows_rejected = {{"public.orders", 3}};
  totals.stream_dead_letters = {{"odd\"name", 1}};
  auto many = registry.add("many", [&] { return totals; });
  auto one = registry.add("one", [] { return RunTotals{}; });
  const std::string text = registry.render();
  EXPECT_THAT(text, HasSubstr("# TYPE skippr_stream_rows_landed_total counter\n"));
  EXPECT_THAT(text, HasSubstr("skippr_stream_rows_landed_total{pipeline=\"many\",stream=\"public.orders\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("skippr_stream_rows_landed_total{pipeline=\"many\",stream=\"odd\\\"name\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("skippr_stream_rows_landed_total{pipeline=\"one\"")));  // one stream: no series
  EXPECT_THAT(text, HasSubstr("skippr_stream_rows_rejected_total{pipeline=\"many\",stream=\"public.orders\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("skippr_stream_dead_letters_total{pipeline=\"many\",stream=\"odd\\\"name\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("skippr_stream_rows_rejected_total{pipeline=\"many\",stream=\"odd")));
}

TEST(StreamMetrics, TheStatusPageAndApiListEachStreamsRowsOverEveryRun) {
  PipelineStatus many;
  many.name = "many";
  many.all_runs.rows_landed = 7;
  many.all_runs.stream_rows_landed = {{"orders", 5}, {"<script>", 2}};
  many.all_runs.stream_rows_rejected = {{"orders", 3}};
  many.all_runs.stream_dead_letters = {{"only_bad", 4}};  // every record of it a dead letter: listed all the same
  PipelineStatus one;
  one.name = "one";
  const std::string html = status_page_html({many, one}, false);
  EXPECT_THAT(html, HasSubstr("<details class=\"streams\"><summary>3 streams</summary>"));
  EXPECT_THAT(html, HasSubstr("<small>orders 5, 3 rejected</small>"));
  EXPECT_THAT(html, HasSubstr("<small>only_bad 0, 4 dead letters</small>"));
  EXPECT_THAT(html, HasSubstr("<small>&lt;script&gt; 2</small>"));
  EXPECT_EQ(html.find("<details"), html.rfind("<details")) << "only the pipeline of several streams lists them";
  const auto api = nlohmann::json::parse(status_json({many, one}));
  EXPECT_EQ(api[0]["all_runs"]["stream_rows_landed"], (nlohmann::json{{"orders", 5}, {"<script>", 2}}));
  EXPECT_EQ(api[0]["all_runs"]["stream_dead_letters"], (nlohmann::json{{"only_bad", 4}}));
  EXPECT_FALSE(api[1]["all_runs"].contains("stream_rows_landed"));
}

}  // namespace
}  // namespace skippr
