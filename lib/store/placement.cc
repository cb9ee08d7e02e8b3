// Where the Store puts blocks: a new stripe on M+K distinct online devices, and a rewritten block
// on its own device or the emptiest one outside its stripe.
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

absl::StatusOr<BlockRecord> StoreCore::AllocateCopy(absl::string_view object,
                                                    const BlockRecord& old,
                                                    std::map<uint32_t, int>& occupied,
                                                    bool allow_same_device, SpaceUse use) {
  MutexLock lock(mu_);
  --occupied[old.device];  // The block leaves its old extent.
  auto eligible = [&](const Device& d) {
    return d.record.state == DeviceState::kOnline && d.ns != nullptr && occupied[d.record.id] == 0;
  };
  std::vector<Device*> candidates;
  if (allow_same_device && old.device < devices_.size() && eligible(*devices_[old.device])) {
    candidates.push_back(devices_[old.device].get());
  }
  std::vector<Device*> others;
  for (auto& d : devices_) {
    if (d->record.id != old.device && eligible(*d)) others.push_back(d.get());
  }
  std::sort(others.begin(), others.end(), [](Device* a, Device* b) {
    return a->allocator.free_lbas() > b->allocator.free_lbas();
  });
  candidates.insert(candidates.end(), others.begin(), others.end());
  for (Device* d : candidates) {
    std::optional<uint64_t> lba = d->allocator.Allocate(old.lba_count);
    if (!lba) continue;
    const ClaimedExtent claim{d->record.id, *lba, old.lba_count,
                              static_cast<uint64_t>(old.lba_count) * d->record.lba_size};
    if (absl::Status s = space_->Claim({&claim, 1}, use); !s.ok()) {
      (void)d->allocator.Free(*lba, old.lba_count);
      ++occupied[old.device];
      return s;
    }
    BlockRecord fresh = old;
    fresh.device = d->record.id;
    fresh.lba = *lba;
    fresh.corrupt = false;
    ++occupied[fresh.device];
    return fresh;
  }
  ++occupied[old.device];
  if (others.empty()) {  // No free space would help: there is no device outside the stripe.
    int online = 0;
    for (auto& d : devices_) online += d->record.state == DeviceState::kOnline && d->ns != nullptr;
    return absl::FailedPreconditionError(
        absl::StrCat("stripe ", old.stripe, " of \"", object, "\" is on every online device (",
                     online, "); add a device or bring one back online to move block ", old.index));
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("out of space: no online device outside stripe ", old.stripe, " has ",
                   static_cast<uint64_t>(old.lba_count) * options_.lba_size,
                   " free bytes for the new copy of block ", old.index,
                   "; nothing was changed. Delete objects or add devices and retry"));
}

absl::Status StoreCore::PlaceStripe(const ObjectRecord& object, uint64_t stripe,
                                    std::vector<BlockRecord>& records) {
  const int width = static_cast<int>(object.data_blocks + object.parity_blocks);
  const uint64_t lbas = LbasPerBlock(object.block_size);
  const size_t first = records.size();
  {
    // Rotate the starting device by object and stripe so data and parity spread evenly.
    MutexLock lock(mu_);
    const size_t n = devices_.size();
    const size_t start = static_cast<size_t>(object.id + stripe) % n;
    for (size_t step = 0; step < n && records.size() - first < static_cast<size_t>(width); ++step) {
      Device& d = *devices_[(start + step) % n];
      if (d.record.state != DeviceState::kOnline || d.ns == nullptr) continue;
      std::optional<uint64_t> lba = d.allocator.Allocate(lbas);
      if (!lba) continue;
      BlockRecord b;
      b.stripe = stripe;
      b.index = static_cast<uint32_t>(records.size() - first);
      b.device = d.record.id;
      b.lba = *lba;
      b.lba_count = static_cast<uint32_t>(lbas);
      records.push_back(b);
    }
  }
  if (records.size() - first < static_cast<size_t>(width)) {
    const size_t got = records.size() - first;
    std::vector<BlockRecord> partial(records.begin() + first, records.end());
    records.resize(first);
    FreeExtents(partial);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of space: stripe ", stripe, " needs ", width, " devices with ",
                     lbas * options_.lba_size, " free bytes each, only ", got,
                     " have it; delete objects or add devices"));
  }
  // The devices have the LBAs; their file systems must have the bytes.
  std::vector<ClaimedExtent> claims;
  for (size_t i = first; i < records.size(); ++i) {
    claims.push_back({records[i].device, records[i].lba, lbas, lbas * options_.lba_size});
  }
  if (absl::Status s = space_->Claim(claims, SpaceUse::kNewData); !s.ok()) {
    std::vector<BlockRecord> placed(records.begin() + first, records.end());
    records.resize(first);
    FreeExtents(placed);
    return s;
  }
  return absl::OkStatus();
}

}  // namespace ecd::store
