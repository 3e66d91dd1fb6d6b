// The private helpers behind load_config, tested directly where the edge cases are easier to reach.
#include <gtest/gtest.h>

#include "config/dotenv.h"
#include "config/expand_env.h"
#include "config/parse_text.h"
#include "config/suggest.h"
#include "config_test_util.h"

namespace skippr::config_detail {
namespace {

using skippr::testing::ScopedEnv;

TEST(Dotenv, ParsesQuotesExportAndComments) {
  const Dotenv d = parse_dotenv(
      "# comment\n"
      "\n"
      "A=plain value # trailing comment\n"
      "export B=\"line\\nbreak \\\"q\\\"\"\n"
      "C='single # not a comment'\n"
      "D=\n"
      "E=x#y\n");
  ASSERT_TRUE(d.problems.empty());
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"A", "plain value"}, {"B", "line\nbreak \"q\""}, {"C", "single # not a comment"}, {"D", ""}, {"E", "x#y"}};
  EXPECT_EQ(d.variables, expected);
}

TEST(Dotenv, ReportsMalformedLinesWithTheirNumber) {
  const Dotenv d = parse_dotenv("OK=1\nnot a pair\n9BAD=2\nQ=\"open\n");
  ASSERT_EQ(d.problems.size(), 3u);
  EXPECT_EQ(d.problems[0].line, 2);
  EXPECT_EQ(d.problems[1].line, 3);
  EXPECT_EQ(d.problems[2].line, 4);
  ASSERT_EQ(d.variables.size(), 1u);
}

TEST(ExpandEnv, Forms) {
  ScopedEnv set("SKIPPR_TEST_X", "x");
  ScopedEnv empty("SKIPPR_TEST_EMPTY", "");
  ScopedEnv unset("SKIPPR_TEST_NOPE", std::nullopt);
  EXPECT_EQ(expand_env("a${SKIPPR_TEST_X}b").value(), "axb");
  EXPECT_EQ(expand_env("${SKIPPR_TEST_NOPE:-d}").value(), "d");
  EXPECT_EQ(expand_env("${SKIPPR_TEST_EMPTY:-d}").value(), "d");
  EXPECT_EQ(expand_env("${SKIPPR_TEST_EMPTY}").value(), "");
  EXPECT_EQ(expand_env("$$ and $5 and $").value(), "$ and $5 and $");
  EXPECT_EQ(expand_env("pa$${SKIPPR_TEST_X}ss").value(), "pa${SKIPPR_TEST_X}ss");  // the documented escape of ${
  EXPECT_FALSE(expand_env("${SKIPPR_TEST_NOPE}").has_value());
  EXPECT_FALSE(expand_env("${SKIPPR_TEST_X").has_value());
  EXPECT_FALSE(expand_env("${bad name}").has_value());
}

TEST(ParseText, ByteSizes) {
  EXPECT_EQ(parse_byte_size("10MiB"), 10ull << 20);
  EXPECT_EQ(parse_byte_size("512 KiB"), 512ull << 10);
  EXPECT_EQ(parse_byte_size("2KB"), 2000u);
  EXPECT_EQ(parse_byte_size("123"), 123u);
  EXPECT_EQ(parse_byte_size("7B"), 7u);
  EXPECT_FALSE(parse_byte_size("1.5MiB"));
  EXPECT_FALSE(parse_byte_size("99999999999999GiB"));  // overflows
  EXPECT_FALSE(parse_byte_size("MiB"));
}

TEST(Suggest, ClosestMatch) {
  EXPECT_EQ(closest_match("tabel", {"path", "table"}), "table");
  EXPECT_EQ(closest_match("duckdb", {"DuckDB", "Stdout"}), "DuckDB");
  EXPECT_EQ(closest_match("completely_different", {"path", "table"}), "");
}

}  // namespace
}  // namespace skippr::config_detail
