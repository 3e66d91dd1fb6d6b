#include "core/identifier_limit.h"

#include <gtest/gtest.h>

namespace skippr {
namespace {

TEST(IdentifierLimit, NamesThatFitAreKept) {
  EXPECT_EQ(fit_identifier("trip_id", 63), "trip_id");
  EXPECT_EQ(fit_identifier(std::string(63, 'a'), 63), std::string(63, 'a'));
  EXPECT_EQ(fit_identifier(std::string(500, 'a'), 0), std::string(500, 'a'));
}

TEST(IdentifierLimit, LongNamesAreCutAndTaggedWithAHashOfTheWholeNameTheSameEveryTime) {
  const std::string a = std::string(64, 'a'), b = std::string(63, 'a') + "b";
  EXPECT_EQ(fit_identifier(a, 63).size(), 63u);
  EXPECT_EQ(fit_identifier(a, 63).substr(0, 55), std::string(54, 'a') + "_");
  EXPECT_EQ(fit_identifier(a, 63), fit_identifier(a, 63));
  EXPECT_NE(fit_identifier(a, 63), fit_identifier(b, 63));
}

TEST(IdentifierLimit, TheCutNeverSplitsAUtf8Character) {
  // 53 ASCII bytes, then two-byte characters: byte 54 is the middle of one, so the cut moves back to 53.
  const std::string name = std::string(53, 'x') + "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";  // 65 bytes
  const std::string fitted = fit_identifier(name, 63);
  EXPECT_EQ(fitted.substr(0, 54), std::string(53, 'x') + "_");
  EXPECT_EQ(fitted.size(), 62u);
}

TEST(IdentifierLimit, FitFieldNamesRenamesOnlyWhatIsTooLong) {
  Schema schema{{{"id", Type::kInt64}, {std::string(70, 'z'), Type::kString}}};
  EXPECT_TRUE(fit_field_names(schema, 63));
  EXPECT_EQ(schema.fields[0].name, "id");
  EXPECT_EQ(schema.fields[1].name, fit_identifier(std::string(70, 'z'), 63));
  EXPECT_FALSE(fit_field_names(schema, 63));
}

}  // namespace
}  // namespace skippr
