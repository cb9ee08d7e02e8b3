// ObjectCatalog: the catalog's interface in the store's terms (objects, versions, placement,
// intents, devices, meta, the commit sequence), and the contract every implementation keeps.
//
// Model. An object has an id, a name, its code (M data and K parity blocks per stripe, a matrix, a
// block size), a size, a stripe count and a version. Each block of each stripe lives at an extent
// (device, lba, lba_count) and carries its CRC32C and a corrupt flag. An object is either pending
// (an intent: an encode in progress, invisible to readers) or committed. Devices carry a state;
// the meta table holds small string settings; commit_seq is the highest operation number committed
// or voided (docs/formats.md, "The commit point").
//
// Placement. The SQLite implementation (Catalog, catalog.h) keeps one row per block. An etcd one
// would keep placement per block group: a run of stripes laid out one extent per device (block i
// of every stripe in the run on device d_i, the extents of consecutive stripes back to back), plus
// a bounded list of per-block overrides (a block moved or marked corrupt), rewriting the group
// when its overrides are full. GetBlocks, the walks and the stripe pages are then a view computed
// from groups and overrides, and each write is one etcd transaction (CommitUpdate's version guard
// a compare on the object's key). Callers cannot tell the two apart: every method answers in
// blocks.
//
// Transactions. Each write is one transaction: all of it happens or none of it, and no reader
// sees part of it. No transaction spans calls: an encode is CreatePendingObject, AddBlocks (any
// number of batches), then CommitObject, and only the last makes the object visible.
//
// Ordering. A write is durable when it returns OK. Calls are linearizable per object: a call that
// starts after a write returned sees it; a call concurrent with a write sees the state before it
// or the state after it, never a mix. Each ForEach walk, and each page of stripes, reads one
// consistent state; two pages may read different ones. (The SQLite catalog runs every call on one
// connection, one at a time, so it is linearizable as a whole.)
//
// What a crash leaves. Every write that returned OK; of each write in progress, all of it or
// nothing. Pending objects are intents: a crash leaves those of the encodes it interrupted, with
// the blocks added so far, and the store drops them when it next starts (DropPendingObjects),
// which frees their extents. commit_seq is durable with the commit that raised it: after a crash it
// is the highest number of an operation whose commit (or void) survived.
//
// A commit whose outcome is unknown. The storage can fail while a write commits (the WAL's fsync
// fails; etcd's answer to a transaction is lost to a timeout or a leader change). The write then
// returns a status for which IsCommitOutcomeUnknown is true: the change may or may not be durable,
// and may or may not be visible. CommitObject, CommitUpdate, DeleteObject and ReplaceBlocks may
// return it, as may any other write. The caller then
//   - learns the outcome by re-reading (GetObject's version, GetBlocks), never by guessing. The
//     outcome is settled, and a re-read authoritative, once the catalog has been opened again
//     (an open settles every earlier commit: SQLite recovers its WAL, etcd would commit a write
//     through the current leader); before that a re-read may show either state. (SQLite: the open
//     connection may read the state before the commit while the next open replays the commit from
//     the WAL.)
//   - neither frees nor reuses the extents the commit would have made live, nor those it would
//     have released: either set may be referenced. The store's next start, which derives free
//     space from the catalog, frees the set that is not.
//   - does not report success, nor undo the operation as if it had failed.
// Any other error from a write means it changed nothing.
//
// Errors every method may return, besides those listed with it: DataLoss for damaged storage
// (IsCatalogDamage) or a record ecd cannot have written; ResourceExhausted when the storage is
// full; Internal for another storage failure; from a write, CommitOutcomeUnknownError.
//
// Thread safety: all methods are thread-safe. A callback (the `fn` of a walk) must not call the
// catalog.
#ifndef ECD_LIB_CATALOG_OBJECT_CATALOG_H_
#define ECD_LIB_CATALOG_OBJECT_CATALOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lib/catalog/catalog_records.h"

namespace ecd::store {

// The status of a write whose commit may or may not be durable (see above): kUnknown, `what`
// naming the write, and a payload that IsCommitOutcomeUnknown recognizes.
absl::Status CommitOutcomeUnknownError(absl::string_view what);

// True only for statuses made by CommitOutcomeUnknownError (not for any other kUnknown).
bool IsCommitOutcomeUnknown(const absl::Status& status);

class ObjectCatalog {
 public:
  virtual ~ObjectCatalog() = default;
  ObjectCatalog(const ObjectCatalog&) = delete;
  ObjectCatalog& operator=(const ObjectCatalog&) = delete;

  // --- Devices.

  // Every device, by id.
  virtual absl::StatusOr<std::vector<DeviceRecord>> ListDevices() = 0;
  // Records a device at `device.id`. AlreadyExists if its id or path is taken.
  virtual absl::Status AddDevice(const DeviceRecord& device) = 0;
  // Sets kOnline, kFailing or kFailed, clearing a down mark. For kDown use SetDeviceDown.
  // NotFound for an unknown device.
  virtual absl::Status SetDeviceState(uint32_t id, DeviceState state) = 0;
  // Marks a device down since `since_unix_ms` for `reason`. NotFound for an unknown device.
  virtual absl::Status SetDeviceDown(uint32_t id, int64_t since_unix_ms,
                                     absl::string_view reason) = 0;
  // Before a device's namespace is replaced by a blank one: marks every block on it corrupt and
  // forgets where its label was (meta `device_label/<id>`). Its state is left as it is.
  virtual absl::Status PrepareReplacement(uint32_t id) = 0;

  // --- Objects and intents. Object ids are positive and never reused.

  // Records an intent: a pending object with `object`'s name and code, at version 1; returns its
  // id. AlreadyExists if a committed or a pending object has the name.
  virtual absl::StatusOr<int64_t> CreatePendingObject(const ObjectRecord& object) = 0;
  // Records blocks of a pending object (a batch of its stripes), all or none. AlreadyExists if a
  // block's (stripe, index) is already recorded for the object, or its extent starts where
  // another block's does. REQUIRES: the object is pending.
  virtual absl::Status AddBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks) = 0;
  // Sets a pending object's final size and stripe count and commits it: from here on it is
  // visible, and it survives a crash. Raises commit_seq to `seq`, the number of the operation
  // whose blocks this makes live (0: none). Internal if the object is not pending.
  virtual absl::Status CommitObject(int64_t object_id, uint64_t size, uint64_t stripe_count,
                                    uint64_t seq = 0) = 0;
  // Removes an object, pending or committed, with all its blocks; raises commit_seq to `seq`.
  // OK if there is no such object.
  virtual absl::Status DeleteObject(int64_t object_id, uint64_t seq = 0) = 0;
  // Removes every pending object with its blocks (the intents a crash left); returns how many.
  // REQUIRES: no encode is in progress (the store calls it as it starts).
  virtual absl::StatusOr<int> DropPendingObjects() = 0;
  // The committed object called `name`. NotFound if there is none (or it is pending).
  virtual absl::StatusOr<ObjectRecord> GetObject(absl::string_view name) = 0;
  // Every committed object, by name.
  virtual absl::StatusOr<std::vector<ObjectRecord>> ListObjects() = 0;
  // Up to `limit` committed objects by name (bytewise, as UTF-8 sorts by code point) whose names
  // are at least `from` (greater than `from` when `after`) and, when `before` is not empty,
  // less than `before`. The cost follows `limit`, not the number of objects.
  virtual absl::StatusOr<std::vector<ObjectRecord>> ListObjectsFrom(absl::string_view from,
                                                                    bool after,
                                                                    absl::string_view before,
                                                                    size_t limit) = 0;
  // The stripes with a block that is corrupt or on one of `unhealthy_devices`, and the objects
  // they belong to. Reads those blocks only (by the corrupt and the extent indexes), so the cost
  // follows the damage, not the number of objects.
  virtual absl::StatusOr<DamageTotals> CountDamage(
      absl::Span<const uint32_t> unhealthy_devices) = 0;
  // Calls `fn` for every committed object without stripes, by id; stops at the first error `fn`
  // returns, and returns it.
  virtual absl::Status ForEachEmptyObject(
      const std::function<absl::Status(const ObjectRecord&)>& fn) = 0;

  // --- Versions.

  // Commits an update of a committed object: points the `replaced` blocks (matched by stripe and
  // index) at their new extents and checksums, clearing their corrupt flags; records the `added`
  // blocks (the new stripes of an append); sets the size and stripe count; adds 1 to the version;
  // raises commit_seq to `seq`. Aborted, with nothing changed, unless the object is committed and
  // at `expected_version`. Internal if a replaced block is not recorded; AlreadyExists as for
  // AddBlocks.
  virtual absl::Status CommitUpdate(int64_t object_id, uint64_t expected_version,
                                    absl::Span<const BlockRecord> replaced,
                                    absl::Span<const BlockRecord> added, uint64_t size,
                                    uint64_t stripe_count, uint64_t seq = 0) = 0;

  // --- Stripe placement. Blocks of pending objects are included unless a method says otherwise.

  // The blocks of stripes [first_stripe, first_stripe + stripe_count) of an object, by stripe
  // and index; empty if none are recorded.
  virtual absl::StatusOr<std::vector<BlockRecord>> GetBlocks(int64_t object_id,
                                                             uint64_t first_stripe,
                                                             uint64_t stripe_count) = 0;
  // Calls `fn` for every block of every object, in no particular order.
  virtual absl::Status ForEachBlock(const std::function<void(const BlockRecord&)>& fn) = 0;
  // Calls `fn` for every block of one object, in no particular order.
  virtual absl::Status ForEachBlockOf(int64_t object_id,
                                      const std::function<void(const BlockRecord&)>& fn) = 0;
  // Calls `fn` for every block on `device` of a committed object, by object, stripe and index;
  // stops at the first error `fn` returns, and returns it.
  virtual absl::Status ForEachBlockOnDevice(
      uint32_t device,
      const std::function<absl::Status(const ObjectRecord&, const BlockRecord&)>& fn) = 0;
  // Points existing blocks of an object (matched by stripe and index) at new extents with new
  // checksums and clears their corrupt flags; raises commit_seq to `seq`. Internal if a block is
  // not recorded; AlreadyExists if a new extent starts where another block's does.
  virtual absl::Status ReplaceBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks,
                                     uint64_t seq = 0) = 0;
  // Sets or clears the corrupt flag of one block; OK, changing nothing, if it is not recorded.
  virtual absl::Status SetBlockCorrupt(int64_t object_id, uint64_t stripe, uint32_t index,
                                       bool corrupt) = 0;
  // Names of the committed objects with a block on `device` whose extent overlaps
  // [first_lba, first_lba + lba_count) (lba_count 0: the whole device), sorted.
  virtual absl::StatusOr<std::vector<std::string>> ObjectsOnDevice(uint32_t device,
                                                                   uint64_t first_lba,
                                                                   uint64_t lba_count) = 0;
  // Pages through the stripes at risk, each with all its blocks, at most `max_stripes` after
  // `after`; stripes of pending objects are left out. REQUIRES: max_stripes > 0.
  // Those with a corrupt block, by (object, stripe):
  virtual absl::StatusOr<StripePage> StripesWithCorruptBlocks(const StripeCursor& after,
                                                              size_t max_stripes) = 0;
  // Those with a block overlapping `range`, by the LBA of that block:
  virtual absl::StatusOr<StripePage> StripesOnDevice(const DeviceRange& range,
                                                     const StripeCursor& after,
                                                     size_t max_stripes) = 0;
  // The committed objects, their bytes and their stripes by parity block count K, in one scan of
  // every object: the store counts once as it opens and keeps the counts from there on.
  virtual absl::StatusOr<ObjectCensus> Census() = 0;
  // The number of blocks on each device that has any.
  virtual absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> BlockCountsByDevice() = 0;

  // --- Meta: small settings of the daemon's components (docs/catalog.md lists the keys).

  // The value of `key`; nullopt when unset.
  virtual absl::StatusOr<std::optional<std::string>> GetMeta(absl::string_view key) = 0;
  virtual absl::Status SetMeta(absl::string_view key, absl::string_view value) = 0;
  // OK if `key` is unset.
  virtual absl::Status DeleteMeta(absl::string_view key) = 0;
  // Every key starting with `prefix`, with its value, by key.
  virtual absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MetaWithPrefix(
      absl::string_view prefix) = 0;

  // --- The commit sequence.

  // The highest operation number committed or voided; 0 for none.
  virtual absl::StatusOr<uint64_t> CommitSeq() = 0;
  // Raises commit_seq to `seq` (an operation that voided its records); never lowers it.
  virtual absl::Status AdvanceCommitSeq(uint64_t seq) = 0;

  // --- Upkeep and stats.

  // Checks the catalog's storage. DataLoss naming the first problems found.
  virtual absl::Status IntegrityCheck() = 0;
  // Copies the whole catalog, as of one moment, to a new SQLite catalog at `path` (one that
  // Catalog::Open reads). REQUIRES: nothing else uses `path`.
  virtual absl::Status Backup(const std::string& path) = 0;
  // Called after each write transaction commits, with the time its commit took (for SQLite the
  // WAL append and its fsync), on the committing thread. The commits of AddBlocks, CommitObject,
  // CommitUpdate, DeleteObject, ReplaceBlocks and AdvanceCommitSeq are always among them.
  // REQUIRES: set before the catalog is shared.
  virtual void SetCommitObserver(std::function<void(std::chrono::nanoseconds)> observer) = 0;
  // The commits the observer saw, and the storage failures, since the catalog was opened.
  virtual CatalogStats stats() const = 0;

 protected:
  ObjectCatalog() = default;
};

}  // namespace ecd::store

#endif  // ECD_LIB_CATALOG_OBJECT_CATALOG_H_
