// DmaMap: a sorted map of registered regions under a reader/writer lock.
#include "lib/nvme/dma_map.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace ecd::nvme {

absl::Status DmaMap::Register(const void* base, uint64_t len, bool fixed) {
  const auto addr = reinterpret_cast<uint64_t>(base);
  if (len == 0 || addr % 4096 != 0 || addr + len < addr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot register %u bytes at %#x for DMA: the region must be non-empty, 4 KiB aligned "
        "and inside the address space",
        len, addr));
  }
  WriterMutexLock lock(mu_);
  auto next = regions_.lower_bound(addr);
  const bool overlaps_next = next != regions_.end() && next->first < addr + len;
  const bool overlaps_prev =
      next != regions_.begin() && std::prev(next)->first + std::prev(next)->second.len > addr;
  if (overlaps_next || overlaps_prev) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot register %u bytes at %#x for DMA: they overlap a registered region", len, addr));
  }
  regions_.emplace_hint(next, addr, Region{len, fixed});
  return absl::OkStatus();
}

absl::Status DmaMap::Unregister(const void* base) {
  WriterMutexLock lock(mu_);
  if (regions_.erase(reinterpret_cast<uint64_t>(base)) == 0) {
    return absl::NotFoundError(absl::StrFormat("no DMA region is registered at %p", base));
  }
  return absl::OkStatus();
}

bool DmaMap::Contains(uint64_t addr, uint64_t len) const {
  if (len == 0 || addr + len < addr) return false;
  ReaderMutexLock lock(mu_);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return false;
  --it;                                           // the last region starting at or before addr
  uint64_t covered = it->first + it->second.len;  // end of the contiguous range so far
  if (covered <= addr) return false;
  while (covered < addr + len) {
    ++it;
    if (it == regions_.end() || it->first != covered) return false;
    covered += it->second.len;
  }
  return true;
}

uint64_t DmaMap::regions() const {
  ReaderMutexLock lock(mu_);
  return regions_.size();
}

std::vector<iovec> DmaMap::FixedRegions() const {
  std::vector<iovec> out;
  ReaderMutexLock lock(mu_);
  for (const auto& [base, region] : regions_) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): host addresses are virtual addresses here
    if (region.fixed) out.push_back(iovec{reinterpret_cast<void*>(base), region.len});
  }
  return out;
}

DmaRegistration::DmaRegistration(DmaMap* map, const void* base, uint64_t len, bool fixed) {
  if (map != nullptr && map->Register(base, len, fixed).ok()) {
    map_ = map;
    base_ = base;
  }
}

DmaRegistration::~DmaRegistration() {
  if (map_ != nullptr) (void)map_->Unregister(base_);
}

DmaRegistration::DmaRegistration(DmaRegistration&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)), base_(other.base_) {}

DmaRegistration& DmaRegistration::operator=(DmaRegistration&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) (void)map_->Unregister(base_);
    map_ = std::exchange(other.map_, nullptr);
    base_ = other.base_;
  }
  return *this;
}

}  // namespace ecd::nvme
