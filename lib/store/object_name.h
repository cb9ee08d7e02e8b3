// Object name rules: what a name given to any RPC that takes one must look like.
// Thread safety: the functions are pure and thread-safe.
#ifndef ECD_LIB_STORE_OBJECT_NAME_H_
#define ECD_LIB_STORE_OBJECT_NAME_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ecd::store {

// The default of StoreOptions::max_name_length (ecd --max-name-length).
inline constexpr size_t kDefaultMaxNameLength = 1024;

// OK when `name` is 1..max_length bytes of valid UTF-8 with no NUL, '\\' or terminal control
// (C0 and C1 controls, DEL, bidirectional formatting: IsTerminalControl), and is a relative path:
// it may hold '/', but does not start with one, and has no empty, "." or ".." segment ("a//b",
// "a/", "./a" and "a/../b" are refused). Otherwise InvalidArgument whose message names the rule
// broken (and the limit, for the length); the message never contains the name's control
// characters or invalid bytes (they are escaped).
absl::Status ValidateObjectName(absl::string_view name, size_t max_length);

// `name` fit to quote in a message (Printable): only the characters that start in the first 64
// bytes are kept (then "...").
std::string EscapeName(absl::string_view name);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_OBJECT_NAME_H_
