// Tests ValidateObjectName: every rule (characters, length, paths), its boundary, and messages
// that name the rule and the limit without echoing control characters.
#include "lib/store/object_name.h"

#include <gtest/gtest.h>

#include <string>

namespace ecd::store {
namespace {

// EXPECT_HAS(text, part): `part` occurs in `text`.
#define EXPECT_HAS(text, part)                                                          \
  do {                                                                                  \
    const std::string t_ = (text);                                                      \
    EXPECT_NE(t_.find(part), std::string::npos) << "\"" << t_ << "\" lacks " << (part); \
  } while (0)

std::string Message(absl::string_view name, size_t max = 1024) {
  absl::Status s = ValidateObjectName(name, max);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
  return std::string(s.message());
}

TEST(ObjectNameTest, AcceptsOrdinaryNames) {
  for (absl::string_view name :
       {"a", "backup.tar", "x y", "..a", "a..", "...", "caf\xc3\xa9", "\xe2\x82\xac",
        "\xf0\x9f\x98\x80", "-_.~!@#$%^&*()[]{}:;'\"<>,?=+|`"}) {
    EXPECT_TRUE(ValidateObjectName(name, 1024).ok()) << name;
  }
}

TEST(ObjectNameTest, LengthLimitIsInclusive) {
  EXPECT_TRUE(ValidateObjectName(std::string(16, 'a'), 16).ok());
  const std::string m = Message(std::string(17, 'a'), 16);
  EXPECT_HAS(m, "17 bytes");
  EXPECT_HAS(m, "limit is 16 bytes");
  EXPECT_HAS(m, "--max-name-length");
  // Bytes, not characters: 3 two-byte characters are 6 bytes.
  EXPECT_TRUE(ValidateObjectName("\xc3\xa9\xc3\xa9\xc3\xa9", 6).ok());
  EXPECT_HAS(Message("\xc3\xa9\xc3\xa9\xc3\xa9", 5), "6 bytes");
}

TEST(ObjectNameTest, RefusesEmptyAndDotNames) {
  EXPECT_HAS(Message(""), "empty");
  EXPECT_HAS(Message("."), "\".\" is not allowed");
  EXPECT_HAS(Message(".."), "\"..\" is not allowed");
}

TEST(ObjectNameTest, AcceptsRelativePaths) {
  for (absl::string_view name :
       {"a/b", "backup/2026/notes.txt", "a/.b/c..", "x/...", "dir/caf\xc3\xa9/f"}) {
    EXPECT_TRUE(ValidateObjectName(name, 1024).ok()) << name;
  }
}

TEST(ObjectNameTest, RefusesALeadingSlashAndEmptyOrDotSegments) {
  EXPECT_HAS(Message("/a"), "starts with '/'");
  EXPECT_HAS(Message("/"), "starts with '/'");
  EXPECT_HAS(Message("a//b"), "an empty path segment at byte 2");
  EXPECT_HAS(Message("a/"), "an empty path segment at byte 2");
  EXPECT_HAS(Message("./a"), "a \".\" segment at byte 0");
  EXPECT_HAS(Message("a/./b"), "a \".\" segment at byte 2");
  EXPECT_HAS(Message("a/../b"), "a \"..\" segment at byte 2");
  EXPECT_HAS(Message("a/.."), "a \"..\" segment at byte 2");
  EXPECT_HAS(Message("a\\b"), "backslash at byte 1");
}

TEST(ObjectNameTest, RefusesC1AndBidirectionalControls) {
  EXPECT_HAS(Message("x\xc2\x9by"), "U+009B");
  const std::string m = Message("evil\xe2\x80\xaetxt.exe");
  EXPECT_HAS(m, "U+202E");
  EXPECT_HAS(m, "at byte 4 of \"evil\\u{202e}txt.exe\"");
  EXPECT_EQ(m.find("\xe2\x80\xae"), std::string::npos);
  for (absl::string_view name : {"a\xe2\x81\xa6"
                                 "b",
                                 "a\xe2\x80\x8f"
                                 "b",
                                 "a\xd8\x9c"
                                 "b"}) {
    EXPECT_HAS(Message(name), "bidirectional");
  }
}

TEST(ObjectNameTest, RefusesNulAndControlCharactersWithoutEchoingThem) {
  const std::string nul("a\0b", 3);
  const std::string m = Message(nul);
  EXPECT_HAS(m, "NUL byte at byte 1");
  EXPECT_HAS(m, "a\\x00b");
  EXPECT_EQ(m.find('\0'), std::string::npos);
  for (char c : {'\x01', '\n', '\r', '\t', '\x1b', '\x1f', '\x7f'}) {
    const std::string name = std::string("x") + c + "y";
    const std::string msg = Message(name);
    EXPECT_HAS(msg, "control character 0x");
    EXPECT_EQ(msg.find(c), std::string::npos) << static_cast<int>(c);
  }
  EXPECT_HAS(Message("a\nb"), "0x0a");
  EXPECT_HAS(Message("a\nb"), "a\\x0ab");
}

TEST(ObjectNameTest, RefusesInvalidUtf8) {
  for (absl::string_view name : {
           "\xff",              // never valid
           "a\x80",             // a lone continuation byte
           "\xc3",              // truncated
           "\xc3(",             // bad continuation
           "\xc0\xaf",          // overlong '/'
           "\xe0\x80\xaf",      // overlong
           "\xed\xa0\x80",      // a surrogate
           "\xf4\x90\x80\x80",  // above U+10FFFF
       }) {
    const std::string m = Message(name);
    EXPECT_HAS(m, "not valid UTF-8");
    EXPECT_EQ(m.find(std::string(name)), std::string::npos) << name;
  }
}

TEST(ObjectNameTest, EscapeNameKeepsTextAndCutsLongNames) {
  EXPECT_EQ(EscapeName("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(EscapeName("a/b"), "a/b");
  EXPECT_EQ(EscapeName("a\x01\xff\\"), "a\\x01\\xff\\x5c");
  EXPECT_EQ(EscapeName(std::string(100, 'n')), std::string(64, 'n') + "...");
}

}  // namespace
}  // namespace ecd::store
