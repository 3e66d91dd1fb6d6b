// Where each stream lands (sinks/kit/stream_tables.h): the table pattern, the folding of stream names, and the
// setup mistakes refused before anything lands.
#include "sinks/kit/stream_tables.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace skippr {
namespace {

using ::testing::HasSubstr;

std::string same(std::string_view name) { return std::string(name); }
std::string lower(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

TEST(StreamTables, APatternNamesOneTablePerStreamWithPlainNames) {
  auto tables = StreamTables::make("sink 'w'", "table", "raw_{stream}", /*source_streams=*/true);
  ASSERT_TRUE(tables) << tables.error().message;
  EXPECT_TRUE(tables->per_stream());
  EXPECT_EQ(tables->table_for("orders"), "raw_orders");
  EXPECT_EQ(tables->table_for("public.order items-2"), "raw_public_order_items_2");
  auto twice = StreamTables::make("sink 'w'", "table", "{stream}_of_{stream}", true);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->table_for("a.b"), "a_b_of_a_b");
}

TEST(StreamTables, OneStreamLandsInTheTableAsWritten) {
  auto tables = StreamTables::make("sink 'w'", "table", "trips", /*source_streams=*/false);
  ASSERT_TRUE(tables);
  EXPECT_FALSE(tables->per_stream());
  EXPECT_EQ(tables->table_for(""), "trips");
}

TEST(StreamTables, SetupMistakesAreConfigErrorsNamingTheSinkAndTheFix) {
  auto shared = StreamTables::make("sink 'w'", "table", "events", true);
  ASSERT_FALSE(shared);
  EXPECT_EQ(shared.error().kind, ErrorKind::kConfig);
  EXPECT_NE(shared.error().message.find("sink 'w': table 'events' would put every stream"), std::string::npos);
  EXPECT_NE(shared.error().message.find("events_{stream}"), std::string::npos);
  auto placeholder = StreamTables::make("sink 'w'", "table", "t_{stream}", false);
  ASSERT_FALSE(placeholder);
  EXPECT_NE(placeholder.error().message.find("names one stream"), std::string::npos);
  auto empty = StreamTables::make("sink 'w'", "table", "", false);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("table is empty"), std::string::npos);
}

TEST(StreamTables, WithoutATableSeveralStreamsLandInTablesOfTheirOwnNamesAndOneStreamIsRefused) {
  auto tables = StreamTables::make("sink 'w'", "table", std::nullopt, /*source_streams=*/true);
  ASSERT_TRUE(tables) << tables.error().message;
  EXPECT_EQ(tables->table_for("public.orders"), "public_orders");
  auto one = StreamTables::make("sink 'w'", "table", std::nullopt, /*source_streams=*/false);
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(one.error().message, HasSubstr("sink 'w': table is missing; name the table to land in"));
}

TEST(StreamTables, TwoStreamsThatFoldToOneTableAreRefusedNamingBoth) {
  auto tables = StreamTables::make("sink 'w'", "table", "raw_{stream}", true);
  ASSERT_TRUE(tables);
  EXPECT_TRUE(tables->claim("public.items", tables->table_for("public.items"), same));
  EXPECT_TRUE(tables->claim("public.items", tables->table_for("public.items"), same)) << "a stream claims again";
  auto clash = tables->claim("public_items", tables->table_for("public_items"), same);
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().kind, ErrorKind::kConfig);
  EXPECT_NE(clash.error().message.find("streams 'public.items' and 'public_items' would both land in table "
                                       "raw_public_items"),
            std::string::npos)
      << clash.error().message;
  // Letter case: one table where the destination folds it (DuckDB), two where it does not (Postgres).
  auto folding = StreamTables::make("sink 'w'", "table", "{stream}", true);
  ASSERT_TRUE(folding);
  EXPECT_TRUE(folding->claim("Orders", "Orders", lower));
  EXPECT_FALSE(folding->claim("orders", "orders", lower));
  auto exact = StreamTables::make("sink 'w'", "table", "{stream}", true);
  EXPECT_TRUE(exact->claim("Orders", "Orders", same));
  EXPECT_TRUE(exact->claim("orders", "orders", same));
}

// A lost DATA_DIR resumes from the newest batch in the ledger of the tables the pattern names, not of every table a
// pipeline of that name ever landed in.
TEST(StreamTables, TheLedgerPatternMatchesEveryStreamsTableAndEscapesTheRest) {
  auto tables = StreamTables::make("sink 'w'", "table", "raw_{stream}", /*source_streams=*/true);
  ASSERT_TRUE(tables);
  EXPECT_EQ(tables->target_like([](std::string_view t) { return "\"s\"." + std::string(t); }), "\"s\".raw!_%");
  // The escape is '!' (no engine's literal reads it as an escape of its own), a backslash stays as it is.
  auto percent = StreamTables::make("sink 'w'", "table", "a%b!\\{stream}", true);
  ASSERT_TRUE(percent);
  EXPECT_EQ(percent->target_like(same), "a!%b!!\\%");
}

// Telling a pipeline's own tables among a dataset's (BigQuery sweeps the staging tables named after them).
TEST(StreamTables, MayNameTellsThePatternsTablesFromOthers) {
  auto tables = StreamTables::make("sink 'w'", "table", "raw_{stream}_v1", /*source_streams=*/true);
  ASSERT_TRUE(tables);
  EXPECT_TRUE(tables->may_name("raw_orders_v1"));
  EXPECT_TRUE(tables->may_name("raw_public_items_v1"));
  EXPECT_TRUE(tables->may_name("raw_x_v1_v1"));
  EXPECT_FALSE(tables->may_name("raw__v1"));  // a stream's name is never empty
  EXPECT_FALSE(tables->may_name("raw_orders"));
  EXPECT_FALSE(tables->may_name("stg_orders_v1"));
  EXPECT_FALSE(tables->may_name("raw_a.b_v1"));  // not a plain name
  auto alone = StreamTables::make("sink 'w'", "table", std::nullopt, true);
  ASSERT_TRUE(alone);
  EXPECT_TRUE(alone->may_name("anything_at_all"));
  auto one = StreamTables::make("sink 'w'", "table", "trips", /*source_streams=*/false);
  ASSERT_TRUE(one);
  EXPECT_TRUE(one->may_name("trips"));
  EXPECT_FALSE(one->may_name("trips2"));
  EXPECT_EQ(tables_as_one_name("raw_{stream}_v1"), "raw__streams__v1");
  EXPECT_EQ(tables_as_one_name("trips"), "trips");
}

// Object stores and folders: a folder per stream under the prefix, added when the user wrote no {stream}.
TEST(StreamFolders, SeveralStreamsGetAFolderOfTheirOwnUnderThePrefix) {
  auto added = stream_prefix("sink 's3'", "prefix", "raw/", /*source_streams=*/true);
  ASSERT_TRUE(added) << added.error().message;
  EXPECT_EQ(*added, "raw/{stream}/");
  EXPECT_EQ(stream_prefix_for(*added, "public.orders"), "raw/public.orders/");
  auto no_slash = stream_prefix("sink 'f'", "path", "/srv/out", true);
  ASSERT_TRUE(no_slash);
  EXPECT_EQ(*no_slash, "/srv/out/{stream}/");
  auto root = stream_prefix("sink 's3'", "prefix", "", true);
  ASSERT_TRUE(root);
  EXPECT_EQ(*root, "{stream}/");
  auto written = stream_prefix("sink 's3'", "prefix", "lake/{stream}/v1/", true);
  ASSERT_TRUE(written);
  EXPECT_EQ(stream_prefix_for(*written, "events"), "lake/events/v1/");
  EXPECT_EQ(stream_prefix_base(*written), "lake");
  EXPECT_EQ(stream_prefix_base("/{stream}/"), "/");
  EXPECT_EQ(stream_prefix_base("{stream}/"), "");
  EXPECT_EQ(stream_prefix_base("raw/"), "raw");
}

TEST(StreamFolders, NoStreamNameMakesFoldersOfItsOwnOrClimbsOut) {
  EXPECT_EQ(stream_prefix_for("raw/{stream}/", "a/b"), "raw/a%2Fb/");
  EXPECT_EQ(stream_prefix_for("raw/{stream}/", ".."), "raw/%2E%2E/");
  EXPECT_EQ(stream_prefix_for("raw/{stream}/", "."), "raw/%2E/");
  EXPECT_EQ(stream_prefix_for("raw/{stream}/", "Orders 2026=x"), "raw/Orders%202026%3Dx/");
  EXPECT_EQ(stream_prefix_for("raw/{stream}/", "a.b-c_d"), "raw/a.b-c_d/");
}

TEST(StreamFolders, OneStreamKeepsThePrefixAndRefusesThePlaceholder) {
  auto kept = stream_prefix("sink 's3'", "prefix", "raw/", /*source_streams=*/false);
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, "raw/");
  EXPECT_EQ(stream_prefix_for(*kept, ""), "raw/");
  auto refused = stream_prefix("S3 sink 'lake'", "prefix", "raw/{stream}/", false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(refused.error().message, HasSubstr("S3 sink 'lake': prefix 'raw/{stream}/' holds {stream}"));
}

}  // namespace
}  // namespace skippr
