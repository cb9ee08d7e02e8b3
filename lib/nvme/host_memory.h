// HostMemory: the host's DMA-able memory in the NVMe model, as a pool of fixed-size pages.
//
// A "host address" is what a PRP entry carries. In this model it is the virtual address of the
// byte inside the arena, so the controller side can translate an address with a bounds check and
// the io_uring layer can use the same memory as registered (fixed) buffers. The page size plays
// the role of CC.MPS: 4 KiB to 64 KiB, a power of two.
//
// Pages are handed out in runs; an allocation prefers one contiguous run (so the data path can
// coalesce it into one I/O) and falls back to several runs when the pool is fragmented, as a
// real host's scattered physical pages would be.
#ifndef ECD_LIB_NVME_HOST_MEMORY_H_
#define ECD_LIB_NVME_HOST_MEMORY_H_

#include <sys/uio.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

// Largest region registered with io_uring as one fixed buffer (the kernel limit is 1 GiB).
inline constexpr uint64_t kMaxFixedBufferBytes = uint64_t{1} << 30;

// [base, base + len) as io_uring fixed buffers: consecutive regions of at most
// kMaxFixedBufferBytes, appended to `out`.
void AppendFixedBuffers(uint8_t* base, uint64_t len, std::vector<iovec>* out);

// Thread safety: all methods are safe to call concurrently.
class HostMemory {
 public:
  // page_size: a power of two from 4 KiB to 64 KiB. page_count >= 1.
  static absl::StatusOr<std::unique_ptr<HostMemory>> Create(uint32_t page_size,
                                                            uint64_t page_count);
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  uint32_t page_size() const { return page_size_; }
  // CC.MPS for this page size: page_size == 1 << (12 + mps()).
  uint32_t mps() const;
  uint64_t page_count() const { return page_count_; }
  uint64_t free_pages() const;
  uint64_t base_address() const { return reinterpret_cast<uint64_t>(base_); }
  uint64_t size_bytes() const { return page_count_ * page_size_; }

  // Allocates `n` pages and returns their host addresses in order. Returns ResourceExhausted at
  // once if fewer than n pages are free (AllocatePagesWait blocks instead). n >= 1.
  absl::StatusOr<std::vector<uint64_t>> AllocatePages(uint64_t n);
  // As AllocatePages, but waits until n pages are free. Returns ResourceExhausted only when n
  // exceeds the whole arena.
  absl::StatusOr<std::vector<uint64_t>> AllocatePagesWait(uint64_t n);
  // Allocates `n` contiguous pages and returns the address of the first, or ResourceExhausted
  // at once when no free run is that long (whatever the free page count). n >= 1.
  absl::StatusOr<uint64_t> AllocateRun(uint64_t n);
  // Returns pages obtained from AllocatePages or AllocateRun. REQUIRES: each is an allocated
  // page address.
  void FreePages(absl::Span<const uint64_t> pages);
  // Returns the n pages starting at `first`, as AllocateRun gave them.
  void FreeRun(uint64_t first, uint64_t n);

  // The DMA view: a pointer to [addr, addr + len) if the whole range lies in the arena, else
  // nullptr (which the controller reports as a Data Transfer Error).
  uint8_t* Translate(uint64_t addr, uint64_t len) const;
  // Copies len bytes at host address addr into dst; false if the range is outside the arena.
  bool Read(uint64_t addr, void* dst, uint64_t len) const;

  // The arena as io_uring fixed buffers: consecutive regions of at most kMaxFixedBufferBytes.
  std::vector<iovec> FixedBuffers() const;

 private:
  HostMemory(uint8_t* mapping, uint64_t mapped_bytes, uint8_t* base, uint32_t page_size,
             uint64_t page_count);
  bool TakeLocked(uint64_t n, std::vector<uint64_t>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The first free run of at least n pages, or free_runs_.end(). REQUIRES: mu_ held.
  std::map<uint64_t, uint64_t>::iterator FirstFitLocked(uint64_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the first n pages of a free run, appending their addresses to `out` unless it is
  // null. REQUIRES: mu_ held, n <= run length.
  void TakeFromRunLocked(std::map<uint64_t, uint64_t>::iterator run, uint64_t n,
                         std::vector<uint64_t>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts pages [index, index + n) back, merged with free neighbours. REQUIRES: mu_ held.
  void GiveBackLocked(uint64_t index, uint64_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  uint8_t* const mapping_;  // what mmap returned
  const uint64_t mapped_bytes_;
  uint8_t* const base_;  // mapping_ rounded up to the page size
  const uint32_t page_size_;
  const uint64_t page_count_;

  mutable Mutex mu_;
  CondVar freed_;
  std::map<uint64_t, uint64_t> free_runs_ ABSL_GUARDED_BY(mu_);  // First page index -> run length
  uint64_t free_pages_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_HOST_MEMORY_H_
