#include "formats/json_rows.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sink_test_util.h"

namespace skippr {
namespace {

TEST(JsonRows, EveryTypeAndNull) {
  Batch b = testing::every_type_batch();
  EXPECT_EQ(row_to_json(b, 0),
            R"({"b":true,"i":-42,"d":3.25,"s":"h)"
            "\u00e9"
            R"(llo \"quoted\"\n","bin":"AAH/","ts":"2024-01-02T03:04:05.123456Z","day":"2024-01-02",)"
            R"("j":{"a":[1,2,{"b":null}]}})");
  EXPECT_EQ(row_to_json(b, 1),
            R"({"b":false,"i":9007199254740993,"d":-1e-300,"s":"","bin":"","ts":"1969-12-31T23:59:59.999999Z",)"
            R"("day":"1969-12-31","j":42})");
  EXPECT_EQ(row_to_json(b, 2), R"({"b":null,"i":null,"d":null,"s":null,"bin":null,"ts":null,"day":null,"j":null})");
}

TEST(JsonRows, InvalidUtf8AndControlCharactersStayValidJson) {
  std::string out;
  append_json_string(std::string("a\x01\xc3(\xed\xa0\x80z", 8), out);
  EXPECT_EQ(out, R"("a\u0001\ufffd(\ufffd\ufffd\ufffdz")");
  EXPECT_TRUE(nlohmann::json::accept(out));
}

TEST(JsonRows, Base64Padding) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(JsonRows, NonFiniteDoubleIsNull) {
  Batch b;
  b.add_column({"d", Type::kDouble});
  b.columns[0].append_double(std::numeric_limits<double>::infinity());
  b.rows = 1;
  EXPECT_EQ(row_to_json(b, 0), R"({"d":null})");
}

}  // namespace
}  // namespace skippr
