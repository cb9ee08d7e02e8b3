// Object name rules (ValidateObjectName) and the escaping of names quoted in messages.
#include "lib/store/object_name.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/util/printable.h"

namespace ecd::store {
namespace {

constexpr size_t kQuoteBytes = 64;

// The path rules: no leading '/', and no empty, "." or ".." segment.
absl::Status ValidateSegments(absl::string_view name) {
  if (name == "." || name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("object name \"", name, "\" is not allowed; use another name"));
  }
  if (name.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("object name \"", EscapeName(name),
                     "\" starts with '/'; names are relative paths such as backup/2026/notes.txt"));
  }
  for (size_t start = 0; start <= name.size();) {
    size_t end = name.find('/', start);
    if (end == absl::string_view::npos) end = name.size();
    const absl::string_view segment = name.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "object name \"", EscapeName(name), "\" has ",
          segment.empty() ? "an empty path segment" : absl::StrCat("a \"", segment, "\" segment"),
          " at byte ", start,
          "; path segments are separated by one '/' and are not \".\" or "
          "\"..\""));
    }
    start = end + 1;
  }
  return absl::OkStatus();
}

// The character rules: valid UTF-8, no NUL, no terminal control, no '\\'.
absl::Status ValidateCharacters(absl::string_view name) {
  for (size_t at = 0; at < name.size();) {
    const unsigned char c = static_cast<unsigned char>(name[at]);
    const std::string where = absl::StrCat(" at byte ", at, " of \"", EscapeName(name), "\"");
    const Utf8Char u = DecodeUtf8(name, at);
    if (c == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("object name contains a NUL byte", where, "; remove it"));
    }
    if (u.length == 1 && IsTerminalControl(c)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("object name contains control character 0x%02x%s; remove it", c, where));
    }
    if (c == '\\') {
      return absl::InvalidArgumentError(absl::StrCat("object name contains a backslash", where,
                                                     "; separate path segments with '/'"));
    }
    if (u.length == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("object name is not valid UTF-8", where, "; names are UTF-8 text"));
    }
    if (IsTerminalControl(u.code_point)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "object name contains U+%04X, a control or bidirectional formatting character%s; "
          "remove it",
          u.code_point, where));
    }
    at += u.length;
  }
  return absl::OkStatus();
}

}  // namespace

std::string EscapeName(absl::string_view name) { return Printable(name, kQuoteBytes); }

absl::Status ValidateObjectName(absl::string_view name, size_t max_length) {
  if (name.empty()) return absl::InvalidArgumentError("object name is empty; give a name");
  if (name.size() > max_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("object name is ", name.size(), " bytes; the limit is ", max_length,
                     " bytes (--max-name-length); use a shorter name"));
  }
  if (absl::Status s = ValidateCharacters(name); !s.ok()) return s;
  return ValidateSegments(name);
}

}  // namespace ecd::store
