// ExtentAllocator: the free space of one device, as runs of free LBAs.
//
// It is never persisted: at start-up the store rebuilds it from the extents the catalog
// references (MarkUsed), so a crash can neither leak nor double-book space.
//
// Thread safety: not thread-safe; the store serializes access.
#ifndef ECD_LIB_STORE_EXTENT_ALLOCATOR_H_
#define ECD_LIB_STORE_EXTENT_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace ecd::store {

class ExtentAllocator {
 public:
  // A device of `lba_count` LBAs, all free.
  explicit ExtentAllocator(uint64_t lba_count);

  // Returns the first LBA of a free run of `count` LBAs (first fit), now used; nullopt when no
  // run is long enough or `count` is 0.
  std::optional<uint64_t> Allocate(uint64_t count);

  // Marks [lba, lba+count) used. Returns FailedPrecondition, changing nothing, if any of it is
  // not free (the catalog references overlapping extents), it is out of range or `count` is 0.
  absl::Status MarkUsed(uint64_t lba, uint64_t count);

  // Returns [lba, lba+count) to the free pool, merged with its free neighbours. Returns
  // FailedPrecondition, changing nothing, if any of it is already free (a double free), it is out
  // of range or `count` is 0.
  absl::Status Free(uint64_t lba, uint64_t count);

  uint64_t lba_count() const { return lba_count_; }
  uint64_t free_lbas() const { return free_lbas_; }
  uint64_t used_lbas() const { return lba_count_ - free_lbas_; }
  // The longest run that Allocate could return.
  uint64_t largest_free_run() const;
  // The free parts of [lba, lba+count), ascending, as (first LBA, count) pairs.
  std::vector<std::pair<uint64_t, uint64_t>> FreeRunsIn(uint64_t lba, uint64_t count) const;

 private:
  const uint64_t lba_count_;
  uint64_t free_lbas_;
  std::map<uint64_t, uint64_t> free_;  // start -> length; runs never touch or overlap.
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_EXTENT_ALLOCATOR_H_
