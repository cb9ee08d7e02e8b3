// Tests size parsing (values and every error) and formatting.
#include "lib/util/size.h"

#include <gtest/gtest.h>

namespace ecd {
namespace {

TEST(SizeTest, ParsesNumbersAndSuffixes) {
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("64K"), 65536u);
  EXPECT_EQ(*ParseSize("64k"), 65536u);
  EXPECT_EQ(*ParseSize("64KB"), 65536u);
  EXPECT_EQ(*ParseSize("64KiB"), 65536u);
  EXPECT_EQ(*ParseSize("1M"), 1048576u);
  EXPECT_EQ(*ParseSize("2G"), 2147483648u);
  EXPECT_EQ(*ParseSize("1T"), 1ull << 40);
  EXPECT_EQ(*ParseSize("512B"), 512u);
  EXPECT_EQ(*ParseSize(" 8M "), 8u << 20);
  EXPECT_EQ(*ParseSize("18446744073709551615"), UINT64_MAX);
}

TEST(SizeTest, RejectsJunk) {
  for (const char* bad : {"", "K", "-1", "1.5M", "12Q", "1MM", "1 M B", "0x10", "1e6",
                          "18446744073709551616", "16777216T", "abc"}) {
    auto s = ParseSize(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << bad;
  }
  EXPECT_NE(ParseSize("12Q").status().message().find("64K"), absl::string_view::npos);
}

TEST(SizeTest, Formats) {
  EXPECT_EQ(FormatSize(0), "0 B");
  EXPECT_EQ(FormatSize(512), "512 B");
  EXPECT_EQ(FormatSize(65536), "64.0 KiB");
  EXPECT_EQ(FormatSize(1 << 20), "1.0 MiB");
  EXPECT_EQ(FormatSize(3758096384ull), "3.5 GiB");
  EXPECT_EQ(FormatSize(1048575), "1.0 MiB");  // not "1024.0 KiB"
  EXPECT_EQ(FormatSize(1048063), "1023.5 KiB");
}

}  // namespace
}  // namespace ecd
