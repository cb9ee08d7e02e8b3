// The Store's stripe buffers: sizing the pipelines to the memory limit and allocating them.
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/records/device_label.h"
#include "lib/store/object_locks.h"
#include "lib/store/object_name.h"
#include "lib/store/store.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"

namespace ecd::store {

Store::ReadBufferSets Store::read_buffer_sets() const {
  std::lock_guard lock(pinned_mu_);
  return {pinned_sets_ - outlived_sets_, outlived_sets_};
}

Store::ArenaStats Store::arena_stats() const {
  ArenaStats s;
  if (arena_ != nullptr) {
    s.bytes = arena_->size_bytes();
    s.free_bytes = arena_->free_pages() * arena_->page_size();
  }
  s.fallbacks = arena_fallbacks_.load();
  return s;
}

absl::StatusOr<StripeSet> Store::AllocateStripes(const std::vector<int>& blocks,
                                                 uint64_t block_size, uint64_t extra,
                                                 const Interrupt& interrupt) {
  const uint64_t stride = LbasPerBlock(block_size) * options_.lba_size;
  uint64_t bytes = extra;
  for (int n : blocks) bytes += RoundUpToPage(static_cast<uint64_t>(n) * stride);
  StripeSet set;
  absl::StatusOr<MemoryBudget::Reservation> reserved = budget_->Reserve(bytes, interrupt);
  if (!reserved.ok()) return reserved.status();
  set.reservation = std::move(*reserved);
  for (int n : blocks) {
    set.buffers.push_back(std::make_unique<StripeBuffer>(n, block_size, stride, arena_.get()));
    if (arena_ != nullptr && !set.buffers.back()->memory.in_arena()) arena_fallbacks_.fetch_add(1);
    if (set.buffers.back()->memory.get() == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory for ", bytes, " bytes of stripe buffers"));
    }
  }
  return set;
}

StripeBuffer* Store::GrowStripes(StripeSet& set, int blocks, uint64_t block_size) {
  const uint64_t stride = LbasPerBlock(block_size) * options_.lba_size;
  std::optional<MemoryBudget::Reservation> reserved =
      budget_->TryReserve(RoundUpToPage(static_cast<uint64_t>(blocks) * stride));
  if (!reserved.has_value()) return nullptr;
  auto buffer = std::make_unique<StripeBuffer>(blocks, block_size, stride, arena_.get());
  if (arena_ != nullptr && !buffer->memory.in_arena()) arena_fallbacks_.fetch_add(1);
  if (buffer->memory.get() == nullptr) return nullptr;  // The reservation goes back.
  set.reservation.Merge(*std::move(reserved));
  set.buffers.push_back(std::move(buffer));
  return set.buffers.back().get();
}

uint64_t Store::LbasPerBlock(uint64_t block_size) const {
  return (block_size + options_.lba_size - 1) / options_.lba_size;
}

size_t Store::WithinQuarter(size_t depth, uint64_t unit, uint64_t extra) const {
  const uint64_t share = budget_->limit_bytes() / 4;
  if (share == 0 || unit == 0) return depth;
  return std::clamp<size_t>(share > extra ? static_cast<size_t>((share - extra) / unit) : 0, 2,
                            depth);
}

size_t Store::PipelineDepth(size_t own, uint64_t unit) const {
  return options_.stripes_in_flight == 0 ? own : WithinQuarter(options_.stripes_in_flight, unit);
}

}  // namespace ecd::store
