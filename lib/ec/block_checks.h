// Argument checks shared by every EC operation: block counts, equal lengths, the block-size
// rule, buffers that do not overlap, and block index lists. Internal to lib/ec.
#ifndef ECD_LIB_EC_BLOCK_CHECKS_H_
#define ECD_LIB_EC_BLOCK_CHECKS_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
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

// Returns InvalidArgument if any two of the [start, start + len) ranges overlap. Sorts `starts`
// in place (callers pass scratch arrays, so the check allocates nothing).
inline absl::Status CheckDisjoint(absl::Span<const uint8_t*> starts, size_t len) {
  std::sort(starts.begin(), starts.end());
  for (size_t i = 1; i < starts.size(); ++i) {
    if (starts[i] < starts[i - 1] + len) {
      return absl::InvalidArgumentError("block buffers overlap; give each block its own memory");
    }
  }
  return absl::OkStatus();
}

// Adds the block `indices` to *mask. InvalidArgument naming the first index outside 0..limit-1
// or already in *mask ("<what> block index 7 is out of range 0..5", "... is listed twice").
template <typename Index>
absl::Status AddBlockIndices(absl::Span<const Index> indices, int limit, const char* what,
                             BlockMask* mask) {
  for (Index i : indices) {
    bool out_of_range = i >= static_cast<Index>(limit);
    if constexpr (std::is_signed_v<Index>) out_of_range |= i < 0;
    if (out_of_range) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " block index ", i, " is out of range 0..", limit - 1));
    }
    if ((*mask)[i]) {
      return absl::InvalidArgumentError(absl::StrCat(what, " block index ", i, " is listed twice"));
    }
    mask->set(i);
  }
  return absl::OkStatus();
}

}  // namespace ecd::ec::internal

#endif  // ECD_LIB_EC_BLOCK_CHECKS_H_
