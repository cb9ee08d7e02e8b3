// The Store's stripe buffers: sizing the pipelines to the memory limit and allocating them.
#include <sys/stat.h>

#include <algorithm>
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
#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::store {

StoreStats StoreCore::Stats() const {
  StoreStats s;
  s.memory = {.limit_bytes = budget_->limit_bytes(),
              .reserved_bytes = budget_->reserved_bytes(),
              .waiting = budget_->waiting(),
              .waits = budget_->waits(),
              .refusals = budget_->refusals()};
  if (arena_ != nullptr) {
    s.arena.bytes = arena_->size_bytes();
    s.arena.free_bytes = arena_->free_pages() * arena_->page_size();
  }
  s.arena.fallbacks = arena_fallbacks_.load();
  {
    MutexLock lock(pinned_mu_);
    s.read_buffers = {pinned_sets_ - outlived_sets_, outlived_sets_};
  }
  s.catalog = catalog_->stats();
  s.catalog_fenced = catalog_->fenced_because();
  s.file_systems = space_->Usage();
  s.stripes_by_parity = StripesByParity();
  return s;
}

absl::StatusOr<StripeSet> StoreCore::AllocateStripes(const std::vector<int>& blocks,
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

StripeBuffer* StoreCore::GrowStripes(StripeSet& set, int blocks, uint64_t block_size) {
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

uint64_t StoreCore::LbasPerBlock(uint64_t block_size) const {
  return (block_size + options_.lba_size - 1) / options_.lba_size;
}

size_t StoreCore::WithinQuarter(size_t depth, uint64_t unit, uint64_t extra) const {
  const uint64_t share = budget_->limit_bytes() / 4;
  if (share == 0 || unit == 0) return depth;
  return std::clamp<size_t>(share > extra ? static_cast<size_t>((share - extra) / unit) : 0, 2,
                            depth);
}

size_t StoreCore::PipelineDepth(size_t own, uint64_t unit) const {
  return options_.stripes_in_flight == 0 ? own : WithinQuarter(options_.stripes_in_flight, unit);
}

}  // namespace ecd::store
