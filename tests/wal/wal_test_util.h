// Helpers shared by the WAL tests: a batch with every column type and nulls, a deep batch comparison, a scratch
// directory, and file surgery (cut, flip) to simulate crashes and bit rot.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/batch.h"

namespace skippr::testing {

// `seed` varies the values so two batches differ; every third row of every column is null.
inline Batch batch_with_every_type(size_t rows, int seed) {
  Batch b;
  for (auto [name, type] : {std::pair{"flag", Type::kBool},
                            {"count", Type::kInt64},
                            {"ratio", Type::kDouble},
                            {"name", Type::kString},
                            {"blob", Type::kBinary},
                            {"at", Type::kTimestamp},
                            {"day", Type::kDate},
                            {"doc", Type::kJson}}) {
    b.add_column({name, type});
  }
  for (size_t r = 0; r < rows; ++r) {
    const auto v = static_cast<int64_t>(r) * 7919 + seed;
    for (Column& c : b.columns) {
      if ((r + static_cast<size_t>(seed)) % 3 == 2) {
        c.append_null();
        continue;
      }
      switch (c.type) {
        case Type::kBool:
          c.append_bool(v % 2 == 0);
          break;
        case Type::kInt64:
          c.append_int(v - 1000000);
          break;
        case Type::kDouble:
          c.append_double(static_cast<double>(v) / 3.0);
          break;
        case Type::kString:
          c.append_string("name-" + std::to_string(v));
          break;
        case Type::kBinary:
          c.append_string(std::string("\0\xff\x01", 3) + std::to_string(v));
          break;
        case Type::kTimestamp:
          c.append_int(1700000000000000 + v);
          break;
        case Type::kDate:
          c.append_int(19000 + v % 1000);
          break;
        case Type::kJson:
          c.append_string(R"({"v":)" + std::to_string(v) + R"(,"tags":["a","b"]})");
          break;
      }
    }
  }
  b.rows = rows;
  return b;
}

// Compares schema, every row's validity and value, and the raw buffers.
inline void expect_batches_equal(const Batch& expected, const Batch& actual) {
  ASSERT_EQ(expected.schema, actual.schema);
  ASSERT_EQ(expected.rows, actual.rows);
  ASSERT_EQ(expected.columns.size(), actual.columns.size());
  for (size_t c = 0; c < expected.columns.size(); ++c) {
    const Column& e = expected.columns[c];
    const Column& a = actual.columns[c];
    ASSERT_EQ(e.type, a.type) << "column " << c;
    ASSERT_EQ(e.size(), a.size()) << "column " << c;
    for (size_t r = 0; r < e.size(); ++r) {
      ASSERT_EQ(e.is_valid(r), a.is_valid(r)) << "column " << c << " row " << r;
      if (!e.is_valid(r)) continue;
      if (is_variable_length(e.type)) {
        ASSERT_EQ(e.string_at(r), a.string_at(r)) << "column " << c << " row " << r;
      } else {
        ASSERT_EQ(e.int_at(r), a.int_at(r)) << "column " << c << " row " << r;
      }
    }
    EXPECT_EQ(e.validity, a.validity) << "column " << c;
    EXPECT_EQ(e.fixed, a.fixed) << "column " << c;
    EXPECT_EQ(e.offsets, a.offsets) << "column " << c;
    EXPECT_EQ(e.bytes, a.bytes) << "column " << c;
  }
}

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "skippr-wal-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_all(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

inline void flip_byte(const std::filesystem::path& path, uint64_t offset) {
  std::string content = read_all(path);
  ASSERT_LT(offset, content.size());
  content[offset] = static_cast<char>(content[offset] ^ 0x5A);
  write_all(path, content);
}

}  // namespace skippr::testing
