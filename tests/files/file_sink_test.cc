// The File sink in-process: each format reads back in DuckDB with the same values (NULL apart from an empty string,
// quotes, commas and newlines in CSV), and a retry of the same BatchId rewrites the same file instead of adding one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/connector.h"
#include "support/duckdb_probe.h"
#include "support/process.h"

namespace skippr::test {
namespace {

Batch tricky_batch() {
  Batch b;
  b.add_column({"id", Type::kInt64});
  b.add_column({"text", Type::kString});
  b.add_column({"ts", Type::kTimestamp});
  const char* texts[] = {"plain", "", "with, comma", "say \"hi\"", "two\nlines"};
  for (int i = 0; i < 6; ++i) {
    b.columns[0].append_int(i);
    if (i == 5) {
      b.columns[1].append_null();
    } else {
      b.columns[1].append_string(texts[i]);
    }
    b.columns[2].append_int(1704067200000000LL + i);  // 2024-01-01T00:00:00.00000iZ
  }
  b.rows = 6;
  return b;
}

std::unique_ptr<Sink> make_file_sink(const std::filesystem::path& folder, const std::string& format,
                                     const std::string& compression) {
  ConnectorContext ctx;
  ctx.name = "out";
  ctx.pipeline = "p";
  ctx.params = {{"path", folder.string()}, {"format", format}, {"compression", compression}};
  auto sink = find_connector("File", false)->make_sink(ctx);
  EXPECT_TRUE(sink.has_value()) << sink.error().message;
  EXPECT_EQ((*sink)->guarantee(), Guarantee::kOverwriteOnRetry);
  EXPECT_TRUE((*sink)->open());
  return std::move(*sink);
}

size_t files_in(const std::filesystem::path& folder) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(folder)) ++n;
  return n;
}

TEST(FileSink, EveryFormatReadsBackInDuckDbAndARetryFindsTheFileAndLeavesIt) {
  TempDir dir;
  const Batch batch = tricky_batch();
  const BatchId id{"p", 1, 7};
  struct Case {
    std::string format, compression, reader;
  };
  const Case cases[] = {
      {"parquet", "auto", "read_parquet('{}')"},
      {"jsonl", "gzip",
       "read_json('{}', format = 'newline_delimited', columns = {{id: 'BIGINT', text: 'VARCHAR', "
       "ts: 'TIMESTAMPTZ'}})"},
      {"csv", "gzip",
       "read_csv('{}', header = true, allow_quoted_nulls = false, columns = {{id: 'BIGINT', text: 'VARCHAR', ts: "
       "'TIMESTAMPTZ'}})"},
  };
  for (const auto& c : cases) {
    const auto folder = dir / c.format;
    auto sink = make_file_sink(folder, c.format, c.compression);
    auto first = sink->write(batch, id);
    ASSERT_TRUE(first);
    EXPECT_EQ(*first, WriteOutcome::kApplied);
    Batch other;  // what a retry would write if it wrote: the file read below must still be the first batch's
    other.add_column({"id", Type::kInt64});
    other.columns[0].append_int(99);
    other.rows = 1;
    auto retry = sink->write(other, id);
    ASSERT_TRUE(retry) << "a retry";
    EXPECT_EQ(*retry, WriteOutcome::kAlreadyApplied) << c.format << ": a retry finds the batch's file";
    ASSERT_EQ(files_in(folder), 1u) << c.format << ": a retry must not write another file";
    const auto file = std::filesystem::directory_iterator(folder)->path();
    EXPECT_EQ(file.filename().string().substr(0, 29), "p-000001-00000000000000000007") << file;
    const std::string relation = fmt::format(fmt::runtime(c.reader), file.string());
    const auto rows = duckdb_memory_rows(fmt::format("SELECT id, text, epoch_us(ts) FROM {} ORDER BY id", relation));
    ASSERT_EQ(rows.size(), 6u) << c.format;
    EXPECT_EQ(rows[1][1], "") << c.format << ": an empty string stays an empty string";
    EXPECT_EQ(rows[2][1], "with, comma") << c.format;
    EXPECT_EQ(rows[3][1], "say \"hi\"") << c.format;
    EXPECT_EQ(rows[4][1], "two\nlines") << c.format;
    EXPECT_EQ(rows[5][1], "NULL") << c.format << ": NULL stays NULL";
    EXPECT_EQ(rows[5][2], "1704067200000005") << c.format;
  }
}

}  // namespace
}  // namespace skippr::test
