// The File source in-process: glob matching, exact resume from every position (plain, gzip and zstd input), a file
// that changed under a saved position, the dead-letter file's trimming of uncommitted lines.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <fstream>

#include "core/connector.h"
#include "engine/dead_letters.h"
#include "formats/json_rows.h"
#include "sources/file/glob.h"
#include "support/duckdb_probe.h"
#include "support/process.h"

namespace skippr::test {
namespace {

std::unique_ptr<Source> make_file_source(const std::string& path, nlohmann::json extra = nlohmann::json::object()) {
  ConnectorContext ctx;
  ctx.name = "inbox";
  ctx.pipeline = "p";
  ctx.params = extra;
  ctx.params["path"] = path;
  auto source = find_connector("File", true)->make_source(ctx);
  EXPECT_TRUE(source.has_value()) << source.error().message;
  EXPECT_TRUE((*source)->open());
  return std::move(*source);
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string gzip(const std::string& text) {
  uLongf size = compressBound(text.size()) + 64;
  std::string out(size, '\0');
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = text.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = out.size();
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

struct Polled {
  std::vector<std::string> rows;  // each as JSON
  std::vector<std::string> dead;  // "file:line"
};

// Rows as JSON without their NULL fields: which columns a batch has depends on where the poll was cut.
void collect(const Poll& p, Polled& into) {
  for (size_t r = 0; r < p.records.rows; ++r) {
    auto row = nlohmann::json::parse(row_to_json(p.records, r));
    for (auto it = row.begin(); it != row.end();) it = it->is_null() ? row.erase(it) : std::next(it);
    into.rows.push_back(row.dump());
  }
  for (const auto& d : p.dead_letters) into.dead.push_back(d.file + ":" + std::to_string(d.line));
}

Polled read_straight(const std::string& glob) {
  Polled straight;
  auto source = make_file_source(glob);
  EXPECT_TRUE(source->seek(Position{}));
  for (bool drained = false; !drained;) {
    auto p = source->poll(Budget{1000000, 1 << 20});
    EXPECT_TRUE(p) << p.error().message;
    if (!p) break;
    collect(*p, straight);
    drained = p->drained;
  }
  return straight;
}

// A new source for every poll, resumed from the previous poll's position, with budgets of a few rows.
Polled read_resumed(const std::string& glob, size_t max_rows_cycle) {
  Polled resumed;
  Position position;
  for (int step = 0; step < 100000; ++step) {
    auto fresh = make_file_source(glob);
    EXPECT_TRUE(fresh->seek(position));
    auto p = fresh->poll(Budget{1 + step % max_rows_cycle, 1 << 20});
    EXPECT_TRUE(p) << p.error().message;
    if (!p) break;
    collect(*p, resumed);
    position = p->position_after;
    if (p->drained) break;
  }
  return resumed;
}

TEST(Glob, DoubleStarMatchesAnyNumberOfFoldersAndStarStaysInOneSegment) {
  const auto g = parse_glob("/data/in/**/*.jsonl.gz");
  EXPECT_EQ(g.base, "/data/in");
  EXPECT_TRUE(glob_matches(g.segments, "a.jsonl.gz"));
  EXPECT_TRUE(glob_matches(g.segments, "x/y/a.jsonl.gz"));
  EXPECT_FALSE(glob_matches(g.segments, "x/a.jsonl"));
  const auto one = parse_glob("/data/in/*.csv");
  EXPECT_TRUE(glob_matches(one.segments, "a.csv"));
  EXPECT_FALSE(glob_matches(one.segments, "sub/a.csv"));
  EXPECT_FALSE(glob_matches(one.segments, ".hidden.csv"));
  const auto plain = parse_glob("/data/file.jsonl");
  EXPECT_EQ(plain.base, "/data");
  EXPECT_TRUE(glob_matches(plain.segments, "file.jsonl"));
}

TEST(FileSource, ResumingFromEveryPositionReadsExactlyWhatOneStraightPassReads) {
  TempDir dir;
  std::string text;
  for (int i = 1; i <= 60; ++i) {
    if (i % 11 == 0) {
      text += "{broken\n";
    } else {
      text += R"({"id":)" + std::to_string(i) + R"(,"v":"x)" + std::to_string(i) +
              (i > 30 ? R"(","late":{"a":1}})" : R"("})") + "\n";
    }
  }
  write_bytes(dir / "in/a.jsonl", text);
  write_bytes(dir / "in/b.jsonl.gz", gzip(text));
  write_bytes(dir / "in/sub/c.jsonl.zst", zstd(text));
  const std::string glob = (dir / "in/**/*.jsonl*").string();

  const Polled straight = read_straight(glob);
  ASSERT_EQ(straight.rows.size(), 3u * 55);
  ASSERT_EQ(straight.dead.size(), 3u * 5);
  const Polled resumed = read_resumed(glob, 4);
  EXPECT_EQ(resumed.rows, straight.rows);
  EXPECT_EQ(resumed.dead, straight.dead);
}

// A nested value lands as the line's own text of it, without the whitespace between tokens: numbers keep their
// spelling and strings their escapes (JSON that reads back to the same value), whatever else the line holds.
TEST(FileSource, NestedValuesKeepTheirOwnTextMinified) {
  TempDir dir;
  write_bytes(dir.path() / "in.jsonl",
              "\xEF\xBB\xBF{\"n\": [ 1 ], \"s\": \"x\"}\n"
              "{\"a\": {\"x\": [1, 2.50, \"s p\", 1e2], \"y\": { }}, \"b\": 1, \"c\": [ ], \"d\": \"t\", \"e\": "
              "{\"q\": \"a\\\"b \\u00e9\"}}\n"
              "{\"s\": \"only scalars\", \"n\": [[ ], {\"deep\" : [true, null]}]}\n");
  auto source = make_file_source((dir.path() / "in.jsonl").string());
  ASSERT_TRUE(source->seek(Position{}));
  auto p = source->poll(Budget{1000, 1 << 20});
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->records.rows, 3u);
  ASSERT_TRUE(p->dead_letters.empty());
  auto text = [&](const std::string& field, size_t row) -> std::string {
    const int c = p->records.schema.index_of(field);
    if (c < 0 || !p->records.columns[c].is_valid(row)) return "NULL";
    EXPECT_EQ(p->records.columns[c].type, Type::kJson) << field;
    return std::string(p->records.columns[c].string_at(row));
  };
  EXPECT_EQ(text("n", 0), "[1]");
  EXPECT_EQ(text("a", 1), R"({"x":[1,2.50,"s p",1e2],"y":{}})");
  EXPECT_EQ(text("c", 1), "[]");
  EXPECT_EQ(text("e", 1), R"({"q":"a\"b \u00e9"})");
  EXPECT_EQ(text("n", 2), R"([[],{"deep":[true,null]}])");
  EXPECT_EQ(text("a", 2), "NULL");
}

TEST(FileSource, ParquetIsReadThroughDuckDbAndResumedByRowNumber) {
  TempDir dir;
  std::filesystem::create_directories(dir / "in");
  duckdb_memory_rows(fmt::format(
      "COPY (SELECT range AS id, 'x' || range AS s, range / 4.0 AS d, {{'a': range, 'b': [1, 2]}} AS nested, "
      "DATE '2024-01-01' + range::INTEGER AS day FROM range(3000)) TO '{}' (FORMAT parquet, ROW_GROUP_SIZE 1000)",
      (dir / "in/data.parquet").string()));
  const std::string glob = (dir / "in/*.parquet").string();
  const Polled straight = read_straight(glob);
  ASSERT_EQ(straight.rows.size(), 3000u);
  EXPECT_EQ(straight.rows[7], R"({"d":1.75,"day":"2024-01-08","id":7,"nested":{"a":7,"b":[1,2]},"s":"x7"})");
  const Polled resumed = read_resumed(glob, 700);
  EXPECT_EQ(resumed.rows, straight.rows);
}

TEST(FileSource, AFileThatChangedUnderASavedPositionIsAClearErrorNotARereading) {
  TempDir dir;
  std::string text;
  for (int i = 1; i <= 20; ++i) text += R"({"id":)" + std::to_string(i) + "}\n";
  write_bytes(dir / "in/a.jsonl", text);
  auto source = make_file_source((dir / "in/*.jsonl").string());
  ASSERT_TRUE(source->seek(Position{}));
  auto p = source->poll(Budget{5, 1 << 20});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->records.rows, 5u);

  write_bytes(dir / "in/a.jsonl", text.substr(0, text.size() / 3));  // shrunk
  auto again = make_file_source((dir / "in/*.jsonl").string());
  ASSERT_TRUE(again->seek(p->position_after));
  auto failed = again->poll(Budget{5, 1 << 20});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(failed.error().message.find("changed after it was partly read"), std::string::npos)
      << failed.error().message;
}

TEST(FileSource, NewFilesArePickedUpOnTheNextPoll) {
  TempDir dir;
  write_bytes(dir / "in/1.jsonl", "{\"id\":1}\n");
  auto source = make_file_source((dir / "in/*.jsonl").string());
  ASSERT_TRUE(source->seek(Position{}));
  auto p = source->poll(Budget{});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->records.rows, 1u);
  EXPECT_TRUE(p->drained);
  write_bytes(dir / "in/0.jsonl", "{\"id\":0}\n");  // sorts first, arrives later: still read, once
  write_bytes(dir / "in/2.jsonl", "{\"id\":2}\n");
  p = source->poll(Budget{});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->records.rows, 2u);
  p = source->poll(Budget{});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->records.rows, 0u);
  EXPECT_TRUE(p->drained);
}

// Issue 21: each poll tells how many files of the listing are not read to their end (the one being read included):
// the metric skippr_source_files_waiting. A file that arrives later counts once the source lists again.
TEST(FileSource, EveryPollTellsTheFilesNotReadToTheirEnd) {
  TempDir dir;
  for (int f = 0; f < 4; ++f) {
    std::string lines;
    for (int i = 0; i < 10; ++i) lines += fmt::format("{{\"f\":{},\"i\":{}}}\n", f, i);
    write_bytes(dir / fmt::format("in/{}.jsonl", f), lines);
  }
  auto source = make_file_source((dir / "in/*.jsonl").string());
  ASSERT_TRUE(source->seek(Position{}));
  std::vector<uint64_t> waiting;
  ASSERT_TRUE(find_connector("File", true)->backlog);
  EXPECT_EQ(find_connector("File", true)->backlog->name, "files") << "the unit its spec declares";
  for (bool drained = false; !drained;) {
    auto p = source->poll(Budget{12, 1 << 20});  // a file and a bit a poll, never ending on a file's end
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_TRUE(p->backlog);
    waiting.push_back(*p->backlog);
    drained = p->drained;
  }
  // After 12 rows: file 1 being read, 2 and 3 listed (3 waiting); 24: 2 and 3; 36: 3; then drained.
  EXPECT_EQ(waiting, (std::vector<uint64_t>{3, 2, 1, 0})) << fmt::format("{}", fmt::join(waiting, ","));

  write_bytes(dir / "in/4.jsonl", "{\"f\":4,\"i\":0}\n{\"f\":4,\"i\":1}\n");
  write_bytes(dir / "in/5.jsonl", "{\"f\":5,\"i\":0}\n");
  auto p = source->poll(Budget{1, 1 << 20});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->records.rows, 1u);
  ASSERT_TRUE(p->backlog);
  EXPECT_EQ(*p->backlog, 2u) << "file 4 being read, file 5 listed";
}

TEST(DeadLetterFile, LinesOfBatchesTheWalNeverCommittedAreDroppedAtStartUp) {
  TempDir dir;
  const auto path = dir / "deadletter.jsonl";
  {
    auto file = DeadLetterFile::open(path, 1, 0);
    ASSERT_TRUE(file);
    ASSERT_TRUE(file->append(1, {{"a.jsonl", 3, "bad", "{x"}}));
    ASSERT_TRUE(file->append(2, {{"a.jsonl", 9, "bad", "{y"}, {"a.jsonl", 10, "bad", "{z"}}));
  }
  std::ofstream(path, std::ios::app) << R"({"epoch":1,"seq":3,"file":"torn)";  // a kill mid-write
  uint64_t dropped = 0;
  auto reopened = DeadLetterFile::open(path, 1, /*last_committed_seq=*/1, &dropped);
  ASSERT_TRUE(reopened);
  EXPECT_EQ(dropped, 3u);
  const std::string kept = read_text(path);
  EXPECT_NE(kept.find("\"line\":3"), std::string::npos);
  EXPECT_EQ(kept.find("\"line\":9"), std::string::npos);
  EXPECT_EQ(std::count(kept.begin(), kept.end(), '\n'), 1);
  // Another epoch's lines (before a RESET) are not judged by this epoch's WAL.
  auto next_epoch = DeadLetterFile::open(path, 2, 0, &dropped);
  ASSERT_TRUE(next_epoch);
  EXPECT_EQ(dropped, 0u);
}

}  // namespace
}  // namespace skippr::test
