// StoreAdmin: a Store's administration apart from its data plane: device states and
// replacement, the listeners the repair planner and the daemon hang on it, the pages of stripes
// the repair walks, the catalog's small settings and its backup. Obtained from Store::admin().
//
// Thread safety: all methods are thread-safe. Errors: as each method says; SetDeviceState,
// MarkDeviceDown and ReplaceDevice return NotFound for an unknown device id; a catalog failure
// is returned as the catalog's status.
#ifndef ECD_LIB_STORE_STORE_ADMIN_H_
#define ECD_LIB_STORE_STORE_ADMIN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/catalog/catalog.h"
#include "lib/store/store_types.h"

namespace ecd::store {

class StoreCore;  // store_core.h, internal

class StoreAdmin {
 public:
  // REQUIRES: `core` outlives this (Store owns both).
  explicit StoreAdmin(StoreCore& core) : core_(core) {}

  // Every device with its usage and data-path counters.
  absl::StatusOr<std::vector<DeviceStatus>> ListDevices();
  // The devices as the store holds them now, without the catalog's block counts.
  std::vector<DeviceRecord> DeviceRecords();
  // kOnline, kFailing or kFailed (kDown: InvalidArgument, use MarkDeviceDown). kOnline reopens
  // the namespace of a device that is not online and checks its label: a blank, foreign or
  // cut-short namespace is refused (FailedPrecondition; ReplaceDevice takes a blank one).
  // kFailing only from kOnline (FailedPrecondition otherwise). With `only_from`, the change is
  // made only if the device is in that state when it runs (FailedPrecondition otherwise): a
  // compare-and-set against operators' changes.
  absl::StatusOr<DeviceStatus> SetDeviceState(uint32_t id, DeviceState state,
                                              std::optional<DeviceState> only_from = std::nullopt);
  // Takes an online or failing device out of service without failing it: its blocks are neither
  // read nor written, and rebuilt only once the repair planner fails it after its delay (the
  // time is stored, so a restart keeps the delay running). FailedPrecondition for a failed or
  // down one.
  absl::StatusOr<DeviceStatus> MarkDeviceDown(uint32_t id, const std::string& reason);
  // Puts a new blank, labelled namespace in the slot of a failed or down device; every block
  // still recorded on it is marked corrupt (the repair rebuilds it) and the device is online.
  // FailedPrecondition for an online or failing device (fail it first), or when the new
  // namespace cannot be opened; ResourceExhausted when it has no free LBA for its label. The
  // blocks are marked corrupt first: after a later error they stay so, the device failed or down.
  absl::StatusOr<DeviceStatus> ReplaceDevice(uint32_t id);
  // Marks down each device whose writes failed StoreOptions::write_errors_to_down times in a row
  // since it was last checked; returns their ids.
  std::vector<uint32_t> DownDevicesWithFailingWrites();

  // Called on the thread that saw it whenever something may need repair: a block found corrupt
  // or unreadable, a device's state changed (from SetDeviceState, with the state-change lock
  // held: the listener must not change a device's state itself), a device's writes failing (then
  // on an I/O completion thread). Must be cheap and must not block. Setting another listener (or
  // none) waits for calls of the old one in progress, so it must not be done from the listener.
  void SetRepairListener(std::function<void()> fn);
  // Called after the store marks a device failing (suspect) because a flush on it failed, with
  // the device and why, on the thread of the request that saw it, with no device or state lock
  // held (an update's, delete's or recover's object lock may be).
  void SetSuspectListener(std::function<void(uint32_t device, const std::string& reason)> fn);

  // Names of objects with a block on `device` overlapping [first_lba, first_lba + lba_count)
  // (lba_count 0: anywhere on the device), sorted.
  absl::StatusOr<std::vector<std::string>> ObjectsOnDevice(uint32_t device, uint64_t first_lba,
                                                           uint64_t lba_count);
  // Pages of the stripes the repair must look at (Catalog::StripesWithCorruptBlocks and
  // Catalog::StripesOnDevice). REQUIRES: max > 0.
  absl::StatusOr<StripePage> StripesWithCorruptBlocks(const StripeCursor& after, size_t max);
  absl::StatusOr<StripePage> StripesOnDevice(const DeviceRange& range, const StripeCursor& after,
                                             size_t max);

  // Small persistent settings of the daemon's own components (the catalog's meta table; keys
  // are listed in docs/catalog.md). GetMeta: nullopt when unset.
  absl::StatusOr<std::optional<std::string>> GetMeta(absl::string_view key);
  absl::Status SetMeta(absl::string_view key, absl::string_view value);
  absl::Status DeleteMeta(absl::string_view key);
  // Every meta key starting with `prefix`, with its value, in key order.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MetaWithPrefix(
      absl::string_view prefix);
  // Copies the catalog, consistent as of one moment, to a new SQLite database at `path`.
  // REQUIRES: nothing else uses `path`.
  absl::Status BackupCatalog(const std::string& path);

  // Requests waiting for stripe memory now (StoreStats::Memory::waiting, without the rest of
  // Stats()): cheap enough to poll.
  uint64_t RequestsWaitingForMemory() const;

  // The store's id (catalog meta `store_id`), written in every device's label.
  const std::string& store_id() const;
  uint32_t lba_size() const;

 private:
  StoreCore& core_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_ADMIN_H_
