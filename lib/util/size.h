// Byte sizes as operators write them ("4096", "64K", "1M", "2GiB") and as ecd prints them.
#ifndef ECD_LIB_UTIL_SIZE_H_
#define ECD_LIB_UTIL_SIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ecd {

// Parses a whole number of bytes with an optional binary suffix: K, M, G, T (also KB/KiB, any
// case) are powers of 1024; a bare trailing "B" means bytes. InvalidArgument for anything else,
// including empty, negative, fractional or overflowing values.
absl::StatusOr<uint64_t> ParseSize(absl::string_view text);

// A short human form: "512 B", "64.0 KiB", "1.0 MiB", "3.5 GiB".
std::string FormatSize(uint64_t bytes);

}  // namespace ecd

#endif  // ECD_LIB_UTIL_SIZE_H_
