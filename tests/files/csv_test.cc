// CSV edge cases through the real binary: File (csv) -> File (jsonl). Quoted delimiters and quotes, a newline inside
// quotes, CRLF, a UTF-8 BOM, empty versus NULL (with the default and with a chosen null string), and a ragged row,
// which goes to the dead-letter file with its line number while every other row lands.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

constexpr std::string_view kCsv =
    "\xEF\xBB\xBFid,name,note\r\n"
    "1,\"Smith, John\",\"said \"\"hi\"\"\"\r\n"
    "2,\"multi\r\nline\",plain\r\n"
    "3,,\"\"\r\n"
    "4,only-two\r\n"
    "5,NULL,\"NULL\"\r\n"
    "6,last,no-newline";

std::vector<nlohmann::json> read_output_rows(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<nlohmann::json> rows;
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

TEST(CsvSource, EdgeCasesLandAsWrittenAndARaggedRowIsDeadLetteredWithItsLine) {
  PipelineFixture fixture(R"(data_sources:
  plain:
    File: { path: in/*.csv }
  nullword:
    File: { path: in/*.csv, format: csv, csv: { null_string: "NULL" } }
data_sinks:
  out_plain:
    File: { path: out_plain, format: jsonl }
  out_nullword:
    File: { path: out_nullword, format: jsonl }
pipelines:
  plain:
    data_source: data_sources.plain
    data_sink: data_sinks.out_plain
  nullword:
    data_source: data_sources.nullword
    data_sink: data_sinks.out_nullword
)");
  std::filesystem::create_directories(fixture.path("in"));
  std::ofstream(fixture.path("in/people.csv"), std::ios::binary) << kCsv;

  for (const std::string pipeline : {"plain", "nullword"}) {
    auto r = fixture.skipprd({"sync", "--pipeline", pipeline, "--once"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto rows = read_output_rows(fixture.path("out_" + pipeline));
    ASSERT_EQ(rows.size(), 5u) << pipeline;
    EXPECT_EQ(rows[0]["id"], "1") << "the BOM must not end up in the first column's name";
    EXPECT_EQ(rows[0]["name"], "Smith, John");
    EXPECT_EQ(rows[0]["note"], "said \"hi\"");
    EXPECT_EQ(rows[1]["name"], "multi\r\nline");
    EXPECT_EQ(rows[1]["note"], "plain") << "CRLF must not leave a \\r in the last field";
    EXPECT_EQ(rows[2]["note"], "") << "a quoted empty field is an empty string";
    EXPECT_EQ(rows[3]["id"], "5");
    EXPECT_EQ(rows[3]["note"], "NULL") << "a quoted NULL is the text NULL";
    EXPECT_EQ(rows[4]["note"], "no-newline");
    if (pipeline == "plain") {
      EXPECT_TRUE(rows[2]["name"].is_null()) << "an unquoted empty field is NULL by default";
      EXPECT_EQ(rows[3]["name"], "NULL");
    } else {
      EXPECT_EQ(rows[2]["name"], "") << "with null_string NULL, an empty field is an empty string";
      EXPECT_TRUE(rows[3]["name"].is_null());
    }

    std::ifstream dead(fixture.path("data/pipelines/" + pipeline + "/deadletter.jsonl"));
    std::vector<nlohmann::json> letters;
    for (std::string line; std::getline(dead, line);) letters.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(letters.size(), 1u);
    EXPECT_EQ(letters[0]["line"], 6);
    EXPECT_EQ(letters[0]["raw"], "4,only-two\r");
    EXPECT_NE(letters[0]["reason"].get<std::string>().find("2 fields where the header has 3"), std::string::npos);

    auto stats = fixture.skipprd({"query", "--sql", "SHOW STATS FOR " + pipeline, "--output", "json"});
    ASSERT_EQ(stats.exit_code, 0) << stats.err;
    EXPECT_NE(stats.out.find(R"({"stat":"dead_letters","value":"1"})"), std::string::npos) << stats.out;
  }
}

}  // namespace
}  // namespace skippr::test
