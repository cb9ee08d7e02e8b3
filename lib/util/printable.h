// Text made safe to print on a terminal or quote in a log line: UTF-8 decoding and the escaping
// of everything a terminal would interpret.
// Thread safety: the functions are pure and thread-safe.
#ifndef ECD_LIB_UTIL_PRINTABLE_H_
#define ECD_LIB_UTIL_PRINTABLE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/string_view.h"

namespace ecd {

// The code point of the valid UTF-8 sequence at text[at] and its length in bytes (1..4);
// length 0 when the bytes there are not valid UTF-8 (overlong forms, surrogates and code points
// above U+10FFFF are invalid). REQUIRES: at < text.size().
struct Utf8Char {
  uint32_t code_point = 0;
  size_t length = 0;
};
Utf8Char DecodeUtf8(absl::string_view text, size_t at);

// True for the code points a terminal acts on rather than shows: C0 controls and DEL, the C1
// controls (U+0080..U+009F), and the bidirectional marks, embeddings, overrides and isolates
// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which reorder what follows them.
bool IsTerminalControl(uint32_t code_point);

// `text` fit to print: valid UTF-8 that is not a terminal control as is; a control or '\\' below
// U+0080, and every byte that is not valid UTF-8, as \xNN; any other terminal control as
// \u{NNNN}. At most the characters that start in the first `max_bytes` bytes are kept, then
// "..." when something was cut.
std::string Printable(absl::string_view text,
                      size_t max_bytes = std::numeric_limits<size_t>::max());

}  // namespace ecd

#endif  // ECD_LIB_UTIL_PRINTABLE_H_
