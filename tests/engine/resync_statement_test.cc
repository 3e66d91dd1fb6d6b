// RESYNC STREAM <stream> IN PIPELINE <name>: how it parses, that the state keeps each stream's requests, and that a
// pipeline whose source cannot read one stream again is refused before anything changes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "engine/control.h"
#include "state/pipeline_state.h"
#include "support/process.h"

namespace skippr {
namespace {

using ::testing::HasSubstr;

TEST(ResyncStatement, ParsesTheStreamAndThePipelineInAnyLetterCase) {
  auto s = parse_statement("resync stream \"public.orders\" In Pipeline shop;");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->kind, StatementKind::kResyncStream);
  EXPECT_EQ(s->stream, "public.orders");
  EXPECT_EQ(s->pipeline, "shop");
}

TEST(ResyncStatement, ResyncTableTakesThePipelineAndTheStreamJoinedByADot) {
  auto s = parse_statement("RESYNC TABLE shop.public.orders");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->kind, StatementKind::kResyncStream);
  EXPECT_EQ(s->stream, "shop.public.orders");  // split against the configuration's pipelines when executed
  EXPECT_FALSE(parse_statement("RESYNC TABLE orders"));
}

TEST(ResyncStatement, AnIncompleteFormSaysHowToWriteIt) {
  for (const char* sql :
       {"RESYNC STREAM orders", "RESYNC STREAM orders OF PIPELINE shop", "RESYNC STREAM IN PIPELINE"}) {
    auto s = parse_statement(sql);
    ASSERT_FALSE(s) << sql;
    EXPECT_EQ(s.error().kind, ErrorKind::kConfig);
    EXPECT_THAT(s.error().message, HasSubstr("RESYNC STREAM <stream> IN PIPELINE <name>")) << sql;
  }
}

TEST(ResyncStatement, TheStateKeepsEachStreamsRequests) {
  test::TempDir dir;
  const auto paths = PipelinePaths::of(dir.path(), "p");
  std::filesystem::create_directories(paths.root);
  PipelineState state;
  state.resync_requests = {{"orders", 2}, {"sales.items", 1}};
  ASSERT_TRUE(save_state(paths, state));
  auto loaded = load_state(paths);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->resync_requests, state.resync_requests);
  EXPECT_FALSE(resync_requests_from_json("[1]"));
  EXPECT_FALSE(resync_requests_from_json(R"({"orders": "two"})"));
}

TEST(ResyncStatement, ASourceThatCannotReadOneStreamAgainIsRefusedNamingTheWayThatWorks) {
  test::TempDir dir;
  test::write_text(dir / "skippr.yml", R"(data_sources:
  s:
    Sample: { rows: 10 }
data_sinks:
  k:
    DuckDB: { path: db.duckdb, table: trips }
pipelines:
  p:
    data_source: s
    data_sink: k
)");
  auto config = load_config(dir / "skippr.yml");
  ASSERT_TRUE(config) << config.error().message;
  Settings settings;
  settings.data_dir = dir / "data";
  for (const char* sql : {"RESYNC STREAM trips IN PIPELINE p", "RESYNC TABLE p.trips"}) {
    auto statement = parse_statement(sql);
    ASSERT_TRUE(statement);
    auto done = execute_statement(*statement, &*config, settings);
    ASSERT_FALSE(done) << sql;
    EXPECT_EQ(done.error().kind, ErrorKind::kConfig);
    EXPECT_THAT(done.error().message, HasSubstr("pipeline 'p' cannot re-sync one stream")) << sql;
    EXPECT_THAT(done.error().message, HasSubstr("RESET PIPELINE p"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "data" / "pipelines" / "p" / "state.json"));
}

// A stream the pipeline never landed (a typo) is refused naming the streams it has; one it has is recorded. Before
// anything landed there is nothing to check a name against.
TEST(ResyncStatement, AStreamThePipelineNeverLandedIsRefusedNamingTheOnesItHas) {
  test::TempDir dir;
  test::write_text(dir / "skippr.yml", R"(data_sources:
  app:
    Postgres: { dsn: "postgresql://u@127.0.0.1:1/app", tables: [orders, items], mode: snapshot_then_cdc }
data_sinks:
  k:
    DuckDB: { path: db.duckdb }
pipelines:
  p:
    data_source: app
    data_sink: k
    landing: merge_by_key
)");
  auto config = load_config(dir / "skippr.yml");
  ASSERT_TRUE(config) << config.error().message;
  Settings settings;
  settings.data_dir = dir / "data";
  const auto paths = PipelinePaths::of(settings.data_dir, "p");
  std::filesystem::create_directories(paths.root);
  const auto resync = [&](const char* sql) {
    auto statement = parse_statement(sql);
    EXPECT_TRUE(statement) << sql;
    return execute_statement(*statement, &*config, settings);
  };
  ASSERT_TRUE(resync("RESYNC TABLE p.ordrs")) << "nothing landed yet: nothing to check against";

  PipelineStats stats;
  stats.stream_rows_landed = {{"orders", 10}, {"items", 4}};
  ASSERT_TRUE(save_stats(paths, stats));
  auto refused = resync("RESYNC TABLE p.ordrs");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(refused.error().message, HasSubstr("no rows of a stream 'ordrs'"));
  EXPECT_THAT(refused.error().message, HasSubstr("items, orders"));
  auto state = load_state(paths);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->resync_requests, (std::map<std::string, uint64_t>{{"ordrs", 1}}));  // only the first, unchecked

  ASSERT_TRUE(resync("RESYNC STREAM orders IN PIPELINE p"));
  state = load_state(paths);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->resync_requests.at("orders"), 1u);
}

}  // namespace
}  // namespace skippr
