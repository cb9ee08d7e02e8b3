// Argument checks shared by every EC operation: block counts, equal lengths, the block-size
// rule, and buffers that do not overlap. Internal to lib/ec.
#ifndef ECD_LIB_EC_BLOCK_CHECKS_H_
#define ECD_LIB_EC_BLOCK_CHECKS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "lib/ec/matrix.h"

namespace ecd::ec::internal {

// Checks that `blocks` holds `count` non-null blocks of one length that passes
// ValidateBlockSize, and stores that length in *length.
template <typename Span>
absl::Status CheckBlocks(const Span& blocks, size_t count, const char* what, size_t* length) {
  if (blocks.size() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", count, " ", what, " blocks, got ", blocks.size()));
  }
  for (const auto& b : blocks) {
    if (b.size() != blocks[0].size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("blocks differ in length (", b.size(), " vs ", blocks[0].size(), ")"));
    }
    if (b.data() == nullptr) return absl::InvalidArgumentError("null block buffer");
  }
  *length = blocks.empty() ? 0 : blocks[0].size();
  return ValidateBlockSize(*length);
}

// Returns InvalidArgument if any two of the [begin, begin+len) ranges overlap.
inline absl::Status CheckDisjoint(std::vector<const uint8_t*> starts, size_t len) {
  std::sort(starts.begin(), starts.end());
  for (size_t i = 1; i < starts.size(); ++i) {
    if (starts[i] < starts[i - 1] + len) {
      return absl::InvalidArgumentError("block buffers overlap; give each block its own memory");
    }
  }
  return absl::OkStatus();
}

}  // namespace ecd::ec::internal

#endif  // ECD_LIB_EC_BLOCK_CHECKS_H_
