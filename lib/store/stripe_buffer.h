// A stripe's buffer (M+K blocks in the DMA arena where it can be) and the set of them one
// request holds with its memory reservation. Internal to lib/store.
//
// Thread safety: none; the request that owns a buffer hands it to an EC worker or to the devices'
// I/O and waits for them before it touches it again.
#ifndef ECD_LIB_STORE_STRIPE_BUFFER_H_
#define ECD_LIB_STORE_STRIPE_BUFFER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "lib/nvme/host_memory.h"
#include "lib/store/memory_budget.h"
#include "lib/store/stripe_memory.h"

namespace ecd::store {

// One stripe of M+K blocks (in the DMA arena where it can be). Each block has `stride` bytes
// (its size rounded up to whole LBAs, the unit of I/O); the checksum and the code cover the
// first block_size bytes. Owns its memory; the views point into it. REQUIRES: block_size <=
// stride, and memory.get() checked non-null before any block is used (the mapping may fail).
struct StripeBuffer {
  StripeBuffer(int blocks, uint64_t block_size, uint64_t stride, nvme::HostMemory* arena)
      : block_size(block_size), stride(stride), memory(arena, blocks * stride) {
    for (int i = 0; i < blocks; ++i) {
      views.emplace_back(memory.get() + i * stride, block_size);
    }
  }
  absl::Span<uint8_t> block(int i) { return views[i]; }
  absl::Span<uint8_t> padded(int i) { return {views[i].data(), stride}; }

  const uint64_t block_size;
  const uint64_t stride;
  StripeMemory memory;
  std::vector<absl::Span<uint8_t>> views;
};

// The stripe buffers of one request and the budget they were reserved from; the buffers go
// first, then the reservation. Must not outlive the MemoryBudget nor the DMA arena.
struct StripeSet {
  MemoryBudget::Reservation reservation;
  std::vector<std::unique_ptr<StripeBuffer>> buffers;
  StripeBuffer& operator[](size_t i) { return *buffers[i]; }
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STRIPE_BUFFER_H_
