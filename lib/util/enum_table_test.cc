// Tests EnumTable: names of listed values, the fallback for the rest, and Valid's checks.
#include "lib/util/enum_table.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace ecd {
namespace {

enum class Color : uint8_t { kRed = 1, kBlue = 4 };
constexpr EnumName<Color> kColorNames[] = {{Color::kRed, "Red"}, {Color::kBlue, "Blue"}};
constexpr EnumTable kColors(kColorNames, "Reserved");
static_assert(kColors.Valid());
static_assert(kColors.IsKnown(Color::kBlue) && !kColors.IsKnown(static_cast<Color>(2)));
static_assert(kColors.Name(Color::kRed) == "Red");

TEST(EnumTable, NamesListedValuesAndFallsBackForTheRest) {
  EXPECT_EQ(kColors.Name(Color::kRed), "Red");
  EXPECT_EQ(kColors.Name(Color::kBlue), "Blue");
  EXPECT_EQ(kColors.Name(static_cast<Color>(0)), "Reserved");
  EXPECT_EQ(kColors.Name(static_cast<Color>(255)), "Reserved");
  EXPECT_EQ(kColors.fallback(), "Reserved");
  EXPECT_EQ(kColors.entries().size(), 2u);
}

TEST(EnumTable, ValidRejectsDuplicatesEmptyNamesAndTheFallbackAsAName) {
  static constexpr EnumName<int> kDuplicate[] = {{1, "a"}, {1, "b"}};
  static constexpr EnumName<int> kEmpty[] = {{1, ""}};
  static constexpr EnumName<int> kFallback[] = {{1, "Reserved"}};
  EXPECT_FALSE(EnumTable(kDuplicate, "Reserved").Valid());
  EXPECT_FALSE(EnumTable(kEmpty, "Reserved").Valid());
  EXPECT_FALSE(EnumTable(kFallback, "Reserved").Valid());
}

}  // namespace
}  // namespace ecd
