// First-fit allocation over an ordered map of free runs, coalescing on free.
#include "lib/devices/extent_allocator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ecd::store {

ExtentAllocator::ExtentAllocator(uint64_t lba_count)
    : lba_count_(lba_count), free_lbas_(lba_count) {
  if (lba_count > 0) free_.emplace(0, lba_count);
}

std::optional<uint64_t> ExtentAllocator::Allocate(uint64_t count) {
  if (count == 0) return std::nullopt;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < count) continue;
    const uint64_t start = it->first;
    const uint64_t rest = it->second - count;
    free_.erase(it);
    if (rest > 0) free_.emplace(start + count, rest);
    free_lbas_ -= count;
    return start;
  }
  return std::nullopt;
}

absl::Status ExtentAllocator::MarkUsed(uint64_t lba, uint64_t count) {
  if (count == 0 || lba >= lba_count_ || count > lba_count_ - lba) {
    return absl::FailedPreconditionError(absl::StrCat(
        "extent [", lba, ", +", count, ") is outside the device (", lba_count_, " LBAs)"));
  }
  auto it = free_.upper_bound(lba);
  if (it == free_.begin()) {
    return absl::FailedPreconditionError(
        absl::StrCat("extent [", lba, ", +", count, ") is already in use"));
  }
  --it;
  const uint64_t run_start = it->first;
  const uint64_t run_end = it->first + it->second;
  if (lba + count > run_end) {
    return absl::FailedPreconditionError(
        absl::StrCat("extent [", lba, ", +", count, ") is already in use"));
  }
  free_.erase(it);
  if (lba > run_start) free_.emplace(run_start, lba - run_start);
  if (lba + count < run_end) free_.emplace(lba + count, run_end - (lba + count));
  free_lbas_ -= count;
  return absl::OkStatus();
}

absl::Status ExtentAllocator::Free(uint64_t lba, uint64_t count) {
  if (count == 0 || lba >= lba_count_ || count > lba_count_ - lba) {
    return absl::FailedPreconditionError(
        absl::StrCat("extent [", lba, ", +", count, ") is outside the device"));
  }
  const uint64_t end = lba + count;
  auto next = free_.lower_bound(lba);
  if (next != free_.end() && next->first < end) {
    return absl::FailedPreconditionError(
        absl::StrCat("double free of extent [", lba, ", +", count, ")"));
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > lba) {
      return absl::FailedPreconditionError(
          absl::StrCat("double free of extent [", lba, ", +", count, ")"));
    }
  }
  uint64_t start = lba;
  uint64_t length = count;
  if (next != free_.end() && next->first == end) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, length);
  free_lbas_ += count;
  return absl::OkStatus();
}

std::vector<std::pair<uint64_t, uint64_t>> ExtentAllocator::FreeRunsIn(uint64_t lba,
                                                                       uint64_t count) const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const uint64_t end = lba + count;
  auto it = free_.upper_bound(lba);
  if (it != free_.begin()) --it;  // The run starting at or before `lba` may reach into it.
  for (; it != free_.end() && it->first < end; ++it) {
    const uint64_t from = std::max(lba, it->first);
    const uint64_t to = std::min(end, it->first + it->second);
    if (from < to) out.emplace_back(from, to - from);
  }
  return out;
}

uint64_t ExtentAllocator::largest_free_run() const {
  uint64_t best = 0;
  for (const auto& [start, length] : free_) best = std::max(best, length);
  return best;
}

}  // namespace ecd::store
