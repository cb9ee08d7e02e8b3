// HostMemory: an mmap'd arena of pages with a run-based free list.
#include "lib/nvme/host_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

absl::StatusOr<std::unique_ptr<HostMemory>> HostMemory::Create(uint32_t page_size,
                                                               uint64_t page_count) {
  if (page_size < 4096 || page_size > 65536 || !std::has_single_bit(page_size)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "host page size %u is not a power of two from 4 KiB to 64 KiB (CC.MPS 0..4)", page_size));
  }
  if (page_count == 0) return absl::InvalidArgumentError("host memory needs at least one page");
  const uint64_t bytes = page_count * page_size;
  // Map one page more than needed and align the start to the page size: mmap only promises
  // 4 KiB alignment, and PRP page addresses must be multiples of the memory page size.
  const uint64_t mapped = bytes + page_size;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot map %u bytes of host memory: %s; lower the host memory setting",
                        bytes, std::strerror(errno)));
  }
  auto* raw = static_cast<uint8_t*>(p);
  const uint64_t misalign = reinterpret_cast<uint64_t>(raw) % page_size;
  uint8_t* base = misalign == 0 ? raw : raw + (page_size - misalign);
  return std::unique_ptr<HostMemory>(new HostMemory(raw, mapped, base, page_size, page_count));
}

HostMemory::HostMemory(uint8_t* mapping, uint64_t mapped_bytes, uint8_t* base, uint32_t page_size,
                       uint64_t page_count)
    : mapping_(mapping),
      mapped_bytes_(mapped_bytes),
      base_(base),
      page_size_(page_size),
      page_count_(page_count) {
  free_runs_[0] = page_count;
  free_pages_ = page_count;
}

HostMemory::~HostMemory() { munmap(mapping_, mapped_bytes_); }

uint32_t HostMemory::mps() const { return std::countr_zero(page_size_) - 12; }

uint64_t HostMemory::free_pages() const {
  MutexLock lock(mu_);
  return free_pages_;
}

void HostMemory::TakeFromRunLocked(std::map<uint64_t, uint64_t>::iterator run, uint64_t n,
                                   std::vector<uint64_t>* out) {
  const uint64_t first = run->first;
  const uint64_t left = run->second - n;
  free_runs_.erase(run);
  if (left > 0) free_runs_[first + n] = left;
  if (out != nullptr) {
    for (uint64_t i = 0; i < n; ++i) out->push_back(base_address() + (first + i) * page_size_);
  }
  free_pages_ -= n;
}

std::map<uint64_t, uint64_t>::iterator HostMemory::FirstFitLocked(uint64_t n) {
  return std::find_if(free_runs_.begin(), free_runs_.end(),
                      [n](const auto& run) { return run.second >= n; });
}

bool HostMemory::TakeLocked(uint64_t n, std::vector<uint64_t>* out) {
  if (n > free_pages_) return false;
  out->clear();
  out->reserve(n);
  // First fit for one contiguous run.
  if (auto run = FirstFitLocked(n); run != free_runs_.end()) {
    TakeFromRunLocked(run, n, out);
    return true;
  }
  // Fragmented: gather from the front runs.
  while (out->size() < n) {
    auto it = free_runs_.begin();
    TakeFromRunLocked(it, std::min<uint64_t>(n - out->size(), it->second), out);
  }
  return true;
}

absl::StatusOr<std::vector<uint64_t>> HostMemory::AllocatePages(uint64_t n) {
  std::vector<uint64_t> pages;
  MutexLock lock(mu_);
  if (n == 0 || !TakeLocked(n, &pages)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "host memory: %u pages wanted, %u of %u free", n, free_pages_, page_count_));
  }
  return pages;
}

absl::StatusOr<uint64_t> HostMemory::AllocateRun(uint64_t n) {
  MutexLock lock(mu_);
  if (auto run = FirstFitLocked(n); n > 0 && run != free_runs_.end()) {
    const uint64_t first = run->first;
    TakeFromRunLocked(run, n, nullptr);
    return base_address() + first * page_size_;
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "host memory: no run of %u free pages (%u of %u pages free)", n, free_pages_, page_count_));
}

absl::StatusOr<std::vector<uint64_t>> HostMemory::AllocatePagesWait(uint64_t n) {
  if (n == 0 || n > page_count_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "host memory: %u pages wanted but the arena has %u; raise the host memory setting", n,
        page_count_));
  }
  std::vector<uint64_t> pages;
  MutexLock lock(mu_);
  freed_.Wait(mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return TakeLocked(n, &pages); });
  return pages;
}

void HostMemory::GiveBackLocked(uint64_t index, uint64_t n) {
  auto next = free_runs_.lower_bound(index);
  uint64_t first = index;
  uint64_t len = n;
  if (next != free_runs_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == index) {
      first = prev->first;
      len += prev->second;
      free_runs_.erase(prev);
    }
  }
  if (next != free_runs_.end() && next->first == index + n) {
    len += next->second;
    free_runs_.erase(next);
  }
  free_runs_[first] = len;
  free_pages_ += n;
}

void HostMemory::FreePages(absl::Span<const uint64_t> pages) {
  {
    MutexLock lock(mu_);
    for (uint64_t addr : pages) GiveBackLocked((addr - base_address()) / page_size_, 1);
  }
  freed_.NotifyAll();
}

void HostMemory::FreeRun(uint64_t first, uint64_t n) {
  {
    MutexLock lock(mu_);
    GiveBackLocked((first - base_address()) / page_size_, n);
  }
  freed_.NotifyAll();
}

uint8_t* HostMemory::Translate(uint64_t addr, uint64_t len) const {
  const uint64_t base = base_address();
  if (addr < base || len > size_bytes() || addr - base > size_bytes() - len) return nullptr;
  return base_ + (addr - base);
}

bool HostMemory::Read(uint64_t addr, void* dst, uint64_t len) const {
  const uint8_t* src = Translate(addr, len);
  if (src == nullptr) return false;
  std::memcpy(dst, src, len);
  return true;
}

void AppendFixedBuffers(uint8_t* base, uint64_t len, std::vector<iovec>* out) {
  for (uint64_t off = 0; off < len; off += kMaxFixedBufferBytes) {
    out->push_back(iovec{base + off, std::min(kMaxFixedBufferBytes, len - off)});
  }
}

std::vector<iovec> HostMemory::FixedBuffers() const {
  std::vector<iovec> out;
  AppendFixedBuffers(base_, size_bytes(), &out);
  return out;
}

}  // namespace ecd::nvme
