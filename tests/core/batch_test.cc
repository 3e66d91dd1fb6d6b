#include <gtest/gtest.h>

#include "core/batch.h"

namespace skippr {
namespace {

Batch make_batch(std::initializer_list<std::pair<std::string, Type>> fields, size_t rows) {
  Batch b;
  for (auto& [name, type] : fields) b.add_column({name, type});
  for (size_t r = 0; r < rows; ++r) {
    for (auto& c : b.columns) {
      if (is_variable_length(c.type)) {
        c.append_string("v" + std::to_string(r));
      } else {
        c.append_int(static_cast<int64_t>(r));
      }
    }
  }
  b.rows = rows;
  return b;
}

TEST(Batch, AppendAddsNewFieldsAsNullableColumns) {
  Batch a = make_batch({{"id", Type::kInt64}}, 3);
  Batch b = make_batch({{"id", Type::kInt64}, {"name", Type::kString}}, 2);
  ASSERT_TRUE(a.append(b));
  ASSERT_EQ(a.rows, 5u);
  ASSERT_EQ(a.schema.fields.size(), 2u);
  const Column& name = a.columns[1];
  for (size_t r = 0; r < 3; ++r) EXPECT_FALSE(name.is_valid(r)) << r;
  EXPECT_TRUE(name.is_valid(3));
  EXPECT_EQ(name.string_at(4), "v1");
  EXPECT_EQ(a.columns[0].int_at(4), 1);
}

TEST(Batch, AppendRejectsATypeChangeNamingTheField) {
  Batch a = make_batch({{"id", Type::kInt64}}, 1);
  Batch b = make_batch({{"id", Type::kString}}, 1);
  auto st = a.append(b);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("'id'"), std::string::npos);
  EXPECT_NE(st.error().message.find("int64 to string"), std::string::npos);
}

// Refused appends change nothing (the engine then cuts the batch and starts a new one with the other records).
TEST(Batch, AppendRefusesFieldsDifferingOnlyInCaseAndLeavesTheBatchAsItWas) {
  Batch a = make_batch({{"id", Type::kInt64}, {"Name", Type::kString}}, 2);
  Batch b = make_batch({{"extra", Type::kInt64}, {"name", Type::kString}}, 1);
  auto st = a.append(b);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(st.error().message.find("'name' differs from field 'Name' only in letter case"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(a.schema.fields.size(), 2u) << "no column of the refused batch may stay behind";
  EXPECT_EQ(a.rows, 2u);
  Batch c = make_batch({{"extra", Type::kInt64}, {"id", Type::kString}}, 1);
  ASSERT_FALSE(a.append(c));
  EXPECT_EQ(a.schema.fields.size(), 2u);
  EXPECT_TRUE(a.check_shape());
}

TEST(Batch, ValidityBitmapSurvivesAppendRange) {
  Column c(Type::kInt64);
  for (int i = 0; i < 20; ++i) {
    if (i % 3 == 0) {
      c.append_null();
    } else {
      c.append_int(i);
    }
  }
  Column d(Type::kInt64);
  d.append_int(100);
  d.append_range(c, 5, 20);
  ASSERT_EQ(d.size(), 16u);
  EXPECT_TRUE(d.is_valid(0));
  for (int i = 5; i < 20; ++i) EXPECT_EQ(d.is_valid(1 + i - 5), i % 3 != 0) << i;
}

}  // namespace
}  // namespace skippr
