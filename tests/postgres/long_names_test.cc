// Field names longer than Postgres keeps (63 bytes) land, run after run, under the shortened name
// docs/guide/bad-data.md documents; before, the first run failed on a syntax error and every later one aborted the
// process.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/identifier_limit.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"

namespace skippr::test {
namespace {

const std::vector<std::string> kSync = {"sync", "--pipeline", "orders", "--once"};

// 89 and 86 bytes, sharing their first 71: cut to 63 bytes they would be one name.
const std::string kLongA = std::string(70, 'a') + "_customer_reference";  // 89 bytes
const std::string kLongB = std::string(70, 'a') + "_customer_region";     // 86 bytes
// Multi-byte characters across the cut: the shortened name is still valid UTF-8.
// 53 bytes then six two-byte characters (65 bytes): byte 54 is inside one.
const std::string kUnicode = "k" + std::string(52, 'y') + "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";

std::string orders_config(const std::string& landing, const std::string& key) {
  std::string config =
      jsonl_files_to_sink_config("in/*.jsonl", postgres_sink_yaml("shop", "orders").substr(4), "orders");
  config += fmt::format("    landing: {}\n", landing);
  if (!key.empty()) config += fmt::format("    primary_key: \"{}\"\n", key);
  return config;
}

void write_orders(const PipelineFixture& fx, const std::string& file, int first, int count) {
  std::filesystem::create_directories(fx.path("in"));
  std::string lines;
  for (int id = first; id < first + count; ++id) {
    lines += fmt::format(R"({{"id": {}, "{}": "ref-{}", "{}": "north", "{}": {}}})", id, kLongA, id, kLongB, kUnicode,
                         id * 10) +
             "\n";
  }
  write_text(fx.path("in/" + file), lines);
}

TEST(PostgresLongNames, NamesOverSixtyThreeBytesLandUnderTheirShortenedNamesRunAfterRun) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("longnames");
  PipelineFixture fx(orders_config("append", ""));
  write_orders(fx, "a.jsonl", 1, 50);
  auto r = fx.skipprd(kSync, postgres_env(pg, db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  write_orders(fx, "b.jsonl", 51, 50);  // a second run finds the columns it made
  r = fx.skipprd(kSync, postgres_env(pg, db));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::string a = fit_identifier(kLongA, 63), b = fit_identifier(kLongB, 63), u = fit_identifier(kUnicode, 63);
  EXPECT_LE(a.size(), 63u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.substr(0, 54), kLongA.substr(0, 54));
  EXPECT_EQ(pg.value(db, fmt::format("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'shop' AND "
                                     "table_name = 'orders' AND column_name IN ('{}', '{}', '{}')",
                                     a, b, u)),
            "3");
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM shop.orders"), "100");
  EXPECT_EQ(pg.value(db, "SELECT count(DISTINCT id) FROM shop.orders"), "100");
  EXPECT_EQ(pg.value(db, fmt::format("SELECT \"{}\" || '/' || \"{}\" || '/' || \"{}\" FROM shop.orders WHERE id = 77",
                                     a, b, u)),
            "ref-77/north/770");
}

TEST(PostgresLongNames, ALongPrimaryKeyMergesUnderItsShortenedName) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("longkey");
  PipelineFixture fx(orders_config("merge_by_key", kLongA));
  write_orders(fx, "a.jsonl", 1, 20);
  auto r = fx.skipprd(kSync, postgres_env(pg, db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  write_orders(fx, "b.jsonl", 11, 20);  // ids 11..20 again: updated in place
  r = fx.skipprd(kSync, postgres_env(pg, db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM shop.orders"), "30");
  EXPECT_EQ(pg.value(db, fmt::format("SELECT count(DISTINCT \"{}\") FROM shop.orders", fit_identifier(kLongA, 63))),
            "30");
}

}  // namespace
}  // namespace skippr::test
