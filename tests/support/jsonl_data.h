// Test data for the File connector: many gzip'd JSON-lines files of uneven sizes, some malformed lines, a later group
// of files that adds fields. The good lines are also written, uncompressed and in one file, as the oracle that
// DuckDB's own read_json reads independently of skipprd.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>

namespace skippr::test {

struct JsonlDataSpec {
  int files = 300;
  uint64_t big_file_bytes = 20ull << 20;  // one file of about this many uncompressed bytes
  int evolved_from = 200;                 // files from this index on carry two more fields
  int bad_every = 97;                     // every n-th line of every 5th file is malformed
  uint64_t max_lines = 0;                 // set: no file but the big one has more lines (many small objects)
  bool gzip = true;
  uint64_t seed = 7;
};

struct JsonlData {
  uint64_t good_lines = 0;
  uint64_t bytes = 0;                              // uncompressed input
  std::set<std::pair<std::string, uint64_t>> bad;  // (file path, line number) of every malformed line
  std::filesystem::path expected;                  // the good lines, one JSON-lines file
};

// Writes files in/<group>/part-<n>.jsonl[.gz] under `dir`, and dir/expected.jsonl.
JsonlData write_jsonl_data(const std::filesystem::path& dir, const JsonlDataSpec& spec);

// The read_json call that reads the oracle with the types skipprd infers (nested values as JSON).
std::string expected_relation(const std::filesystem::path& expected);
// count(*), count(DISTINCT id) and an order-independent content hash of `relation`, as one "a|b|c" string.
std::string digest_sql(const std::string& relation);

}  // namespace skippr::test
