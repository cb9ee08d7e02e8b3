// StripeMemory: the zeroed memory of one stripe buffer, in a form the devices move in place.
//
// It is a run of the store's DMA arena when the arena has a free run that long: the arena is
// registered with every device's io_uring as fixed buffers, so the blocks move with no copy and
// no per-I/O page pinning (docs/nvme.md, "Memory registered for DMA"). Otherwise (no arena, a
// full or a fragmented one) it is memory mapped for this buffer alone, which the devices stage
// through their pools.
#ifndef ECD_LIB_STORE_STRIPE_MEMORY_H_
#define ECD_LIB_STORE_STRIPE_MEMORY_H_

#include <cstdint>

#include "lib/nvme/host_memory.h"

namespace ecd::store {

// Thread safety: an object is used by one thread at a time; different objects may share the
// arena from any threads.
class StripeMemory {
 public:
  // `bytes` > 0 of zeroed memory. `arena` may be null and must outlive this object. get() is
  // null when the memory could not be had (the kernel refused a mapping).
  StripeMemory(nvme::HostMemory* arena, uint64_t bytes);
  ~StripeMemory();
  StripeMemory(const StripeMemory&) = delete;
  StripeMemory& operator=(const StripeMemory&) = delete;

  uint8_t* get() const { return data_; }
  // True when the memory is a run of the arena.
  bool in_arena() const { return arena_ != nullptr; }

 private:
  nvme::HostMemory* arena_ = nullptr;  // set when the memory is a run of it
  uint64_t run_pages_ = 0;
  uint8_t* data_ = nullptr;
  uint64_t mapped_bytes_ = 0;  // otherwise: our own mapping of this many bytes
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STRIPE_MEMORY_H_
