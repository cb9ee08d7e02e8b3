// StripeMemory: an arena run, or an anonymous mapping.
#include "lib/store/stripe_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace ecd::store {

StripeMemory::StripeMemory(nvme::HostMemory* arena, uint64_t bytes) {
  if (arena != nullptr) {
    const uint64_t pages = (bytes + arena->page_size() - 1) / arena->page_size();
    if (absl::StatusOr<uint64_t> run = arena->AllocateRun(pages); run.ok()) {
      arena_ = arena;
      run_pages_ = pages;
      data_ = arena->Translate(*run, pages * arena->page_size());
      std::memset(data_, 0, bytes);  // as fresh as a mapping: no earlier request's bytes
      return;
    }
  }
  // Page-aligned, zeroed memory straight from the kernel, given back with munmap, so that stripe
  // buffers never linger in malloc's arenas: the resident size follows the budget. Populated at
  // once: one call instead of a page fault per 4 KiB as the buffer is first filled.
  mapped_bytes_ = std::max<uint64_t>(bytes, 4096);
  void* p = ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return;
  data_ = static_cast<uint8_t*>(p);
}

StripeMemory::~StripeMemory() {
  if (arena_ != nullptr) {
    arena_->FreeRun(reinterpret_cast<uint64_t>(data_), run_pages_);
  } else if (data_ != nullptr) {
    ::munmap(data_, mapped_bytes_);
  }
}

}  // namespace ecd::store
