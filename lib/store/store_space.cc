// Store: giving the file system back the space of free extents at start-up (the namespace files
// are sparse; a free extent that still holds bytes takes real space for nothing).
#include <vector>

#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"
#include "lib/util/size.h"

namespace ecd::store {

void StoreCore::ReclaimFreeSpace() {
  for (auto& d : devices_) {
    std::shared_ptr<Namespace> ns;
    {
      MutexLock lock(mu_);
      if (d->ns == nullptr ||
          (d->record.state != DeviceState::kOnline && d->record.state != DeviceState::kFailing)) {
        continue;
      }
      ns = d->ns;
    }
    // Only what takes space in the file is looked at: a sparse file's holes are skipped.
    std::vector<std::pair<uint64_t, uint64_t>> punch;
    {
      MutexLock lock(mu_);
      for (const Namespace::LbaRange& r : ns->AllocatedRanges()) {
        for (const auto& run : d->allocator.FreeRunsIn(r.lba, r.count)) punch.push_back(run);
      }
    }
    uint64_t lbas = 0;
    for (const auto& [lba, count] : punch) {
      ns->Deallocate(lba, count);
      lbas += count;
    }
    if (lbas > 0) {
      Log(LogLevel::kInfo,
          "device %d: gave back %s of free extents that still held bytes (writes that were never "
          "committed, or deletes not yet punched, before the last stop)",
          d->record.id, FormatSize(lbas * d->record.lba_size));
    }
  }
}

}  // namespace ecd::store
