// Object name rules (ValidateObjectName) and the escaping of names quoted in messages.
#include "lib/store/object_name.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ecd::store {
namespace {

constexpr size_t kQuoteBytes = 64;

// Length of the valid UTF-8 sequence starting at s[at] (1..4), or 0 if it is not valid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8Length(absl::string_view s, size_t at) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[at + i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
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
    return 0;
  }
  if (at + n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

}  // namespace

std::string EscapeName(absl::string_view name) {
  std::string out;
  size_t at = 0;
  while (at < name.size() && at < kQuoteBytes) {
    const unsigned char c = static_cast<unsigned char>(name[at]);
    const size_t n = Utf8Length(name, at);
    if (n == 0 || IsControl(c) || c == '\\') {
      absl::StrAppendFormat(&out, "\\x%02x", c);
      ++at;
    } else {
      out.append(name.data() + at, n);
      at += n;
    }
  }
  if (at < name.size()) out += "...";
  return out;
}

absl::Status ValidateObjectName(absl::string_view name, size_t max_length) {
  if (name.empty()) return absl::InvalidArgumentError("object name is empty; give a name");
  if (name.size() > max_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("object name is ", name.size(), " bytes; the limit is ", max_length,
                     " bytes (--max-name-length); use a shorter name"));
  }
  if (name == "." || name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("object name \"", name, "\" is not allowed; use another name"));
  }
  for (size_t at = 0; at < name.size();) {
    const unsigned char c = static_cast<unsigned char>(name[at]);
    const std::string where = absl::StrCat(" at byte ", at, " of \"", EscapeName(name), "\"");
    if (c == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("object name contains a NUL byte", where, "; remove it"));
    }
    if (IsControl(c)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("object name contains control character 0x%02x%s; remove it", c, where));
    }
    if (c == '/' || c == '\\') {
      return absl::InvalidArgumentError(
          absl::StrCat("object name contains a path separator ('", std::string(1, c), "')", where,
                       "; names are flat, use another character such as '_' or '-'"));
    }
    const size_t n = Utf8Length(name, at);
    if (n == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("object name is not valid UTF-8", where, "; names are UTF-8 text"));
    }
    at += n;
  }
  return absl::OkStatus();
}

}  // namespace ecd::store
