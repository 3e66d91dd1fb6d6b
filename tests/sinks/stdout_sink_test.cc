#include "sinks/stdout/stdout_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "sink_test_util.h"

namespace skippr {
namespace {

// Runs `fn` with file descriptor 1 pointing at a file, and returns what was written.
template <class Fn>
std::string capture_stdout(const std::filesystem::path& file, Fn fn) {
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  FILE* sink = std::fopen(file.c_str(), "w");
  dup2(fileno(sink), STDOUT_FILENO);
  fn();
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  std::fclose(sink);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(StdoutSink, WritesOneJsonLinePerRowWithEveryType) {
  testing::TempDir dir;
  auto sink = stdout_sink_spec().make_sink(ConnectorContext{});
  ASSERT_TRUE(sink);
  EXPECT_EQ((*sink)->guarantee(), Guarantee::kNone);
  std::string text = capture_stdout(dir.path() / "out.jsonl", [&] {
    auto outcome = (*sink)->write(testing::every_type_batch(), BatchId{"p", 1, 1});
    ASSERT_TRUE(outcome);
    EXPECT_EQ(*outcome, WriteOutcome::kApplied);
  });

  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u) << text;
  EXPECT_EQ(lines[0]["b"], true);
  EXPECT_EQ(lines[0]["i"], -42);
  EXPECT_EQ(lines[0]["d"], 3.25);
  EXPECT_EQ(lines[0]["s"], "h\u00e9llo \"quoted\"\n");
  EXPECT_EQ(lines[0]["bin"], "AAH/");
  EXPECT_EQ(lines[0]["ts"], "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(lines[0]["day"], "2024-01-02");
  EXPECT_EQ(lines[0]["j"], nlohmann::json::parse(R"({"a":[1,2,{"b":null}]})"));  // a value, not a string
  EXPECT_EQ(lines[1]["i"].get<int64_t>(), 9007199254740993);
  EXPECT_EQ(lines[1]["d"], -1e-300);
  EXPECT_EQ(lines[1]["ts"], "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(lines[1]["j"], 42);
  for (const auto& [key, value] : lines[2].items()) EXPECT_TRUE(value.is_null()) << key;
  EXPECT_EQ(lines[2].size(), 8u);
}

}  // namespace
}  // namespace skippr
