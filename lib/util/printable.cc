// UTF-8 decoding and terminal-safe escaping (printable.h).
#include "lib/util/printable.h"

#include "absl/strings/str_format.h"

namespace ecd {

Utf8Char DecodeUtf8(absl::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char c = byte(0);
  if (c < 0x80) return {c, 1};
  size_t n;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return {};
  }
  if (at + n > text.size()) return {};
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return {};
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {};
  return {cp, n};
}

bool IsTerminalControl(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string Printable(absl::string_view text, size_t max_bytes) {
  std::string out;
  size_t at = 0;
  while (at < text.size() && at < max_bytes) {
    const Utf8Char c = DecodeUtf8(text, at);
    if (c.length == 0 ||
        (c.code_point < 0x80 && (IsTerminalControl(c.code_point) || c.code_point == '\\'))) {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(text[at]));
      ++at;
    } else if (IsTerminalControl(c.code_point)) {
      absl::StrAppendFormat(&out, "\\u{%04x}", c.code_point);
      at += c.length;
    } else {
      out.append(text.data() + at, c.length);
      at += c.length;
    }
  }
  if (at < text.size()) out += "...";
  return out;
}

}  // namespace ecd
