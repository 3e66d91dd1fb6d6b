// No record can block a pipeline because of its content (issue 11, item 3): names no destination can take, values a
// column cannot hold and a damaged compressed file each end where they belong (dead letters or the rejects table,
// with a reason), the good rows land once, the run exits 0, and the counts add up to the input.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/compression.h"
#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr const char* kConfig = R"(data_sources:
  inbox:
    File: { path: "in/*" }
data_sinks:
  warehouse:
    DuckDB: { path: out.duckdb, table: orders }
pipelines:
  orders:
    data_source: data_sources.inbox
    data_sink: data_sinks.warehouse
)";

std::map<uint64_t, std::string> dead_letter_reasons(const std::filesystem::path& file, std::string_view source) {
  std::map<uint64_t, std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.at("file").get<std::string>().ends_with(source)) out[j.at("line").get<uint64_t>()] = j.at("reason");
  }
  return out;
}

TEST(Poison, EveryKindOfBadRecordEndsWithAReasonAndTheRestLandsOnce) {
  PipelineFixture f(kConfig);
  // Names: an empty key, two keys that differ only in case (in one record, and against an earlier record's), a key
  // with the reserved prefix.
  write_text(f.path("in/a.jsonl"),
             "{\"id\":1,\"name\":\"a\"}\n"
             "{\"\":5,\"id\":2}\n"
             "{\"id\":3,\"Name\":\"x\",\"name\":\"y\"}\n"
             "{\"id\":4,\"_skippr_x\":1}\n"
             "{\"id\":5,\"NAME\":\"z\"}\n"
             "{\"id\":6,\"name\":\"ok\"}\n");
  // A gzip file cut in the middle: its readable part lands, the rest is one dead letter, the next file is read.
  std::string lines;
  for (int i = 0; i < 20000; ++i) lines += fmt::format("{{\"id\":{},\"name\":\"row-{}\"}}\n", 1000 + i, i * 7919);
  auto packed = compress_buffer(lines, Compression::kGzip);
  ASSERT_TRUE(packed);
  write_text(f.path("in/b.jsonl.gz"), packed->substr(0, packed->size() / 2));
  write_text(f.path("in/c.jsonl"), "{\"id\":9,\"name\":\"after the damaged file\"}\n");
  // Values the existing column cannot hold: "12" fits BIGINT, "x12" does not and goes to the rejects table.
  duckdb_write(f.path("out.duckdb"), "CREATE TABLE orders (id BIGINT, name VARCHAR, code BIGINT)");
  write_text(f.path("in/d.jsonl"), "{\"id\":10,\"code\":\"12\"}\n{\"id\":11,\"code\":\"x12\"}\n");

  auto r = f.skipprd({"sync", "--pipeline", "orders", "--once", "--log", "warn"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto db = f.path("out.duckdb");

  // Names: rows 2-5 of a.jsonl are dead letters, each with its reason; 1 and 6 landed.
  const auto dead = dead_letter_reasons(f.path("data/pipelines/orders/deadletter.jsonl"), "a.jsonl");
  ASSERT_EQ(dead.size(), 4u);
  EXPECT_NE(dead.at(2).find("empty name"), std::string::npos) << dead.at(2);
  EXPECT_NE(dead.at(3).find("only in letter case"), std::string::npos) << dead.at(3);
  EXPECT_NE(dead.at(4).find("reserved prefix _skippr_"), std::string::npos) << dead.at(4);
  EXPECT_NE(dead.at(5).find("'NAME' differs from field 'name'"), std::string::npos) << dead.at(5);
  EXPECT_EQ(duckdb_value(db, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM orders WHERE id < 20"), "1,6,9,10");

  // The damaged file: a prefix of its lines landed, in order and once each, and one dead letter names the offset.
  const auto damaged = dead_letter_reasons(f.path("data/pipelines/orders/deadletter.jsonl"), "b.jsonl.gz");
  ASSERT_EQ(damaged.size(), 1u);
  EXPECT_NE(damaged.begin()->second.find("readable up to byte"), std::string::npos) << damaged.begin()->second;
  const uint64_t from_b = std::stoull(duckdb_value(db, "SELECT count(*) FROM orders WHERE id >= 1000"));
  EXPECT_GT(from_b, 100u);
  EXPECT_LT(from_b, 20000u);
  EXPECT_EQ(duckdb_value(db,
                         "SELECT count(DISTINCT id) = count(*) AND max(id) = 999 + count(*) FROM orders WHERE id "
                         ">= 1000"),
            "true");
  EXPECT_EQ(damaged.begin()->first, from_b + 1) << "the dead letter names the first line that could not be read";

  // The value that does not fit: in the rejects table with its reason and record; the one that fits was converted.
  EXPECT_EQ(duckdb_value(db, "SELECT code FROM orders WHERE id = 10"), "12");
  EXPECT_EQ(duckdb_value(db, "SELECT count(*) FROM orders__skippr_rejected"), "1");
  EXPECT_NE(duckdb_value(db, "SELECT reason FROM orders__skippr_rejected").find("column \"code\" is BIGINT"),
            std::string::npos);
  EXPECT_EQ(
      duckdb_value(db, "SELECT record::JSON->>'id' || ' ' || (record::JSON->>'code') FROM orders__skippr_rejected"),
      "11 x12");

  // The counts add up: every readable record is landed, rejected or a dead letter.
  auto stats = f.skipprd({"query", "--sql", "SHOW STATS FOR orders", "--output", "json"});
  const uint64_t landed = std::stoull(duckdb_value(db, "SELECT count(*) FROM orders"));
  EXPECT_EQ(landed, 4 + from_b);
  EXPECT_NE(stats.out.find(fmt::format(R"({{"stat":"rows_landed","value":"{}"}})", landed)), std::string::npos)
      << stats.out;
  EXPECT_NE(stats.out.find(R"({"stat":"rows_rejected","value":"1"})"), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find(R"({"stat":"dead_letters","value":"5"})"), std::string::npos) << stats.out;

  // Nothing is left to retry: a rerun reads nothing and changes nothing.
  auto again = f.skipprd({"sync", "--pipeline", "orders", "--once"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(std::to_string(landed), duckdb_value(db, "SELECT count(*) FROM orders"));
}

}  // namespace
}  // namespace skippr::test
