// DmaMap: host memory outside a device's own page pool that its controller may transfer data
// to and from, as memory registered for DMA (SPDK's spdk_mem_register, an IOMMU mapping).
//
// The store registers its stripe buffers here, so PRPs can point straight at them: a block
// moves between a stripe and the namespace with no copy through the device's pool. Addresses
// are virtual addresses, as everywhere in this NVMe model. A controller that meets a data
// pointer neither in its pool nor in a registered region fails the command with a Data
// Transfer Error, as an IOMMU fault would. PRP lists always live in the device's pool.
//
// A region registered as fixed (a long-lived arena) is also registered with the io_uring of
// every device opened after it, as fixed buffers, so its transfers skip the kernel's per-I/O
// page pinning. Other regions move with plain READ/WRITE.
//
// The granularity is the region, not its owner's allocations: a PRP into a run of an arena that
// was freed and handed to another request still translates, where a real IOMMU mapping per
// buffer would fault. Adjacent regions count as one range.
#ifndef ECD_LIB_NVME_DMA_MAP_H_
#define ECD_LIB_NVME_DMA_MAP_H_

#include <sys/uio.h>

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

// Thread safety: all methods are safe to call concurrently.
class DmaMap {
 public:
  DmaMap() = default;
  DmaMap(const DmaMap&) = delete;
  DmaMap& operator=(const DmaMap&) = delete;

  // Makes [base, base + len) transferable. REQUIRES: the memory stays valid until Unregister.
  // InvalidArgument when len is 0, base is not 4 KiB aligned or the range overlaps a region
  // already registered.
  absl::Status Register(const void* base, uint64_t len, bool fixed = false);
  // Removes the region registered at `base`. REQUIRES: no transfer uses it any more. NotFound
  // when no region starts there.
  absl::Status Unregister(const void* base);

  // True when every byte of [addr, addr + len) lies in registered regions (adjacent regions
  // count as one range). len > 0.
  bool Contains(uint64_t addr, uint64_t len) const;
  uint64_t regions() const;
  // The regions registered as fixed, in address order, for io_uring buffer registration.
  std::vector<iovec> FixedRegions() const;

 private:
  struct Region {
    uint64_t len;
    bool fixed;
  };
  mutable SharedMutex mu_;
  std::map<uint64_t, Region> regions_ ABSL_GUARDED_BY(mu_);  // by base address
};

// A registration that ends with its owner. Default-constructed or moved-from: nothing.
class DmaRegistration {
 public:
  DmaRegistration() = default;
  // Registers with `map` (may be null: nothing is registered). Failures are not reported: an
  // unregistered buffer still works, through the device's pool.
  DmaRegistration(DmaMap* map, const void* base, uint64_t len, bool fixed = false);
  ~DmaRegistration();
  DmaRegistration(DmaRegistration&& other) noexcept;
  DmaRegistration& operator=(DmaRegistration&& other) noexcept;

  bool registered() const { return map_ != nullptr; }

 private:
  DmaMap* map_ = nullptr;
  const void* base_ = nullptr;
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_DMA_MAP_H_
