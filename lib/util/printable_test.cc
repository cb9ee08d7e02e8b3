// Tests DecodeUtf8, IsTerminalControl and Printable: valid text kept, every terminal control and
// invalid byte escaped, long text cut.
#include "lib/util/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace ecd {
namespace {

TEST(DecodeUtf8, CodePointsAndLengths) {
  EXPECT_EQ(DecodeUtf8("a", 0).code_point, 'a');
  EXPECT_EQ(DecodeUtf8("\xc3\xa9", 0).code_point, 0xe9u);
  EXPECT_EQ(DecodeUtf8("\xc3\xa9", 0).length, 2u);
  EXPECT_EQ(DecodeUtf8("\xe2\x80\xae", 0).code_point, 0x202eu);
  EXPECT_EQ(DecodeUtf8("\xf0\x9f\x98\x80", 0).length, 4u);
  for (absl::string_view bad : {"\xff", "\x80", "\xc3", "\xc3(", "\xc0\xaf", "\xe0\x80\xaf",
                                "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    EXPECT_EQ(DecodeUtf8(bad, 0).length, 0u) << Printable(bad);
  }
}

TEST(IsTerminalControl, C0C1DelAndBidiControlsOnly) {
  for (uint32_t cp : {0x00u, 0x1bu, 0x1fu, 0x7fu, 0x80u, 0x85u, 0x9bu, 0x9fu, 0x61cu, 0x200eu,
                      0x200fu, 0x202au, 0x202eu, 0x2066u, 0x2069u}) {
    EXPECT_TRUE(IsTerminalControl(cp)) << cp;
  }
  for (uint32_t cp : {0x20u, 0x41u, 0x7eu, 0xa0u, 0xe9u, 0x200du, 0x2030u, 0x206au, 0x1f600u}) {
    EXPECT_FALSE(IsTerminalControl(cp)) << cp;
  }
}

TEST(Printable, KeepsTextEscapesControlsAndCuts) {
  EXPECT_EQ(Printable("backup/2026/caf\xc3\xa9"), "backup/2026/caf\xc3\xa9");
  EXPECT_EQ(Printable("a\x1b[31m\\"), "a\\x1b[31m\\x5c");
  EXPECT_EQ(Printable("a\xff\n"), "a\\xff\\x0a");
  EXPECT_EQ(Printable("x\xc2\x9by"), "x\\u{009b}y");                        // C1 CSI
  EXPECT_EQ(Printable("evil\xe2\x80\xaetxt.exe"), "evil\\u{202e}txt.exe");  // RLO
  EXPECT_EQ(Printable(std::string(100, 'n'), 64), std::string(64, 'n') + "...");
  EXPECT_EQ(Printable("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9\xc3\xa9");  // a character started in 3
  EXPECT_EQ(Printable("\xc3\xa9\xc3\xa9\xc3\xa9", 3), "\xc3\xa9\xc3\xa9...");
}

}  // namespace
}  // namespace ecd
