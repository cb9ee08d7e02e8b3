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

// OK when `name` is 1..max_length bytes of valid UTF-8 with no '/', '\\', NUL or other control
// character (bytes below 0x20, and 0x7f) and is not "." or "..". Otherwise InvalidArgument
// whose message names the rule broken (and the limit, for the length); the message never
// contains the name's control characters or invalid bytes (they are escaped).
absl::Status ValidateObjectName(absl::string_view name, size_t max_length);

// `name` fit to quote in a message: printable ASCII and valid UTF-8 as is, every other byte (and
// '\\') as \xNN; only the characters that start in the first 64 bytes are kept (then "...").
std::string EscapeName(absl::string_view name);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_OBJECT_NAME_H_
