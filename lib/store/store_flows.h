// What the Store's flow files (encode.cc, read.cc, update.cc, recover.cc, ...) share: the
// pipelines' default depths and small helpers over catalog rows. Internal to lib/store.
// Thread safety: the helpers are pure functions; a StripeRef is a view (see there).
#ifndef ECD_LIB_STORE_STORE_FLOWS_H_
#define ECD_LIB_STORE_STORE_FLOWS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "lib/catalog/catalog.h"
#include "lib/ec/codec.h"
#include "lib/ec/matrix.h"
#include "lib/nvme/host_memory.h"
#include "lib/store/object_name.h"

namespace ecd::store {

// Stripes fetched from the catalog at a time, and the stripes whose block rows an encode
// buffers before it inserts them.
inline constexpr uint64_t kStripeBatch = 64;
// The pipelines' depths unless StoreOptions::stripes_in_flight sets them.
// An encode keeps, beyond the one filling and one per EC worker, this many stripes being
// written: workers + 1 + kWritesInFlight stripes, each being filled, encoded or written.
inline constexpr size_t kWritesInFlight = 2;
// Stripes a read reads ahead of the one it is sending.
inline constexpr size_t kReadAhead = 2;
// Stripes a recover keeps at most: one being checked, rebuilt and written, the others being read.
inline constexpr uint64_t kRecoverStripes = 4;

// A lookup of `name` failed with `status`. NotFound for a name no object can be created with
// becomes the name rule it breaks (ValidateObjectName), so that a bad name gets a message that
// says what is wrong with it and control characters are never echoed; objects stored before a
// rule existed (or under a longer --max-name-length) stay reachable, as they are found first.
inline absl::Status LookupError(absl::Status status, absl::string_view name, size_t max_length) {
  if (!absl::IsNotFound(status)) return status;
  absl::Status rule = ValidateObjectName(name, max_length);
  return rule.ok() ? status : rule;
}

// A stripe buffer's bytes as the budget counts them: whole pages, as the DMA arena hands them
// out, so that the budget never promises more than the arena holds.
inline uint64_t RoundUpToPage(uint64_t bytes) {
  return (bytes + nvme::kMinPageSize - 1) / nvme::kMinPageSize * nvme::kMinPageSize;
}

// The stripe memory the most demanding single request on an object of M+K blocks of `stride`
// bytes needs at least: an update's two stripes, or a recover's two stripes plus the K blocks
// it verifies parity with. An object must never be stored if it could not be repaired.
inline uint64_t LeastStripeMemory(uint64_t m, uint64_t k, uint64_t stride) {
  return 2 * RoundUpToPage((m + k) * stride) + RoundUpToPage(k * stride);
}

// The set of block indices in `indices`. REQUIRES: each is below ec::kMaxDataBlocks +
// ec::kMaxParityBlocks.
inline ec::BlockMask MaskOf(const std::vector<int>& indices) {
  ec::BlockMask mask;
  for (int i : indices) mask.set(static_cast<size_t>(i));
  return mask;
}

// One stripe of an object as the stripe helpers take it (StoreCore::LoadBlocks, RebuildStripe,
// CheckStripe, VerifyParity): the object, the stripe's number, the codec of the object's shape
// and the stripe's block rows by index (null where the catalog has none). A view: what it refers
// to must outlive it.
struct StripeRef {
  const ObjectRecord& object;
  uint64_t stripe;
  const std::shared_ptr<const ec::Codec>& codec;
  const std::vector<const BlockRecord*>& by_index;
};

// The blocks of `stripe` by index (null where the catalog has none), taken from rows ordered
// by stripe and index starting at `row`, which is advanced past them. The pointers point into
// `rows`, which must outlive them; rows with an index of `width` or more are skipped.
inline std::vector<const BlockRecord*> TakeStripe(const std::vector<BlockRecord>& rows, size_t& row,
                                                  uint64_t stripe, int width) {
  std::vector<const BlockRecord*> by_index(width, nullptr);
  for (; row < rows.size() && rows[row].stripe == stripe; ++row) {
    if (rows[row].index < static_cast<uint32_t>(width)) by_index[rows[row].index] = &rows[row];
  }
  return by_index;
}

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_FLOWS_H_
