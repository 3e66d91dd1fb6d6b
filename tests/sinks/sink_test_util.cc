#include "sink_test_util.h"

#include <fmt/format.h>
#include <unistd.h>

#include <random>

namespace skippr::testing {

TempDir::TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::random_device rd;
  path_ =
      std::filesystem::temp_directory_path() / fmt::format("skippr-{}-{}-{}-{:x}", info ? info->test_suite_name() : "t",
                                                           info ? info->name() : "t", ::getpid(), rd());
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Batch every_type_batch() {
  Batch b;
  b.add_column({"b", Type::kBool});
  b.add_column({"i", Type::kInt64});
  b.add_column({"d", Type::kDouble});
  b.add_column({"s", Type::kString});
  b.add_column({"bin", Type::kBinary});
  b.add_column({"ts", Type::kTimestamp});
  b.add_column({"day", Type::kDate});
  b.add_column({"j", Type::kJson});
  auto& c = b.columns;
  // row 0
  c[0].append_bool(true);
  c[1].append_int(-42);
  c[2].append_double(3.25);
  c[3].append_string("h\u00e9llo \"quoted\"\n");
  c[4].append_string(std::string("\x00\x01\xff", 3));
  c[5].append_int(1704164645123456);  // 2024-01-02T03:04:05.123456Z
  c[6].append_int(19724);             // 2024-01-02
  c[7].append_string(R"({"a":[1,2,{"b":null}]})");
  // row 1
  c[0].append_bool(false);
  c[1].append_int(9007199254740993);  // above 2^53: must survive exactly
  c[2].append_double(-1e-300);
  c[3].append_string("");
  c[4].append_string("");
  c[5].append_int(-1);  // 1969-12-31T23:59:59.999999Z
  c[6].append_int(-1);  // 1969-12-31
  c[7].append_string("42");
  // row 2: all NULL
  for (auto& column : c) column.append_null();
  b.rows = 3;
  return b;
}

Batch simple_batch(size_t rows, int64_t first_id) {
  Batch b;
  b.add_column({"id", Type::kInt64});
  b.add_column({"x", Type::kDouble});
  b.add_column({"name", Type::kString});
  for (auto& column : b.columns) column.reserve(rows, rows * 12);
  for (size_t r = 0; r < rows; ++r) {
    const int64_t id = first_id + static_cast<int64_t>(r);
    b.columns[0].append_int(id);
    b.columns[1].append_double(static_cast<double>(id) / 2);
    b.columns[2].append_string(fmt::format("name-{}", id));
  }
  b.rows = rows;
  return b;
}

QueryRows read_db(const std::filesystem::path& path, const std::string& sql) {
  auto db = DuckDbDatabase::open(path.string());
  EXPECT_TRUE(db) << db.error().message;
  if (!db) return {};
  auto conn = DuckDbConnection::connect(*db);
  EXPECT_TRUE(conn);
  auto rows = conn->query(sql);
  EXPECT_TRUE(rows) << sql << ": " << rows.error().message;
  return rows ? *rows : QueryRows{};
}

std::string scalar(const std::filesystem::path& path, const std::string& sql) {
  auto rows = read_db(path, sql);
  if (rows.rows.size() != 1 || rows.rows[0].size() != 1) return "<no single value>";
  return rows.rows[0][0].value_or("NULL");
}

}  // namespace skippr::testing
