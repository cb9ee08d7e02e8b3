// Store: ecd's objects on a set of devices. It cuts an object into stripes of M data blocks,
// adds K parity blocks per stripe, places the M+K blocks of a stripe on M+K distinct devices,
// keeps a CRC32C of every block, and serves reads (rebuilding lost or corrupt blocks on the
// fly), updates, recovery, stat, list and delete. Devices and settings are administered through
// admin() (store_admin.h).
//
// Durability: an object's catalog commit happens only after every block of it has been written
// and flushed on its device; until then it is invisible and a crash leaves no trace (its pending
// rows are dropped and its extents are free at the next Open).
// Memory: each request's stripe buffers come out of one budget (StoreOptions::memory_limit);
// an encode holds up to ec_workers + 3 stripes of (M+K) x block size bytes, a read up to 3
// (no more than it reads), an update 2, a recover up to 4 within a quarter of the budget (and
// K blocks to verify parity), a verifying stat 1; a wide stripe gets a shallower pipeline.
//
// Thread safety: all methods are thread-safe. Reads and stats of an object run concurrently;
// update, delete and recover of an object exclude other requests on that object only.
// Waits: a request waits for its object's lock and for stripe memory; the requests that take an
// Interrupt stop waiting when it fires (DeadlineExceeded or Cancelled, nothing done or held).
// Ownership: sources, sinks and callbacks are borrowed for the call only (a sink's pins may
// outlive it: ByteSink::WritePinned).
// A commit of unknown outcome: when a catalog commit fails so that it may or may not be durable,
// the request returns that status (IsCommitOutcomeUnknown; its change may or may not have
// happened) and every later change is refused with FailedPrecondition until the store is opened
// again, which settles it (StoreStats::catalog_fenced says why).
#ifndef ECD_LIB_STORE_STORE_H_
#define ECD_LIB_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/store/byte_stream.h"
#include "lib/store/interrupt.h"
#include "lib/store/listing.h"
#include "lib/store/store_options.h"
#include "lib/store/store_types.h"

namespace ecd::store {

class StoreAdmin;  // store_admin.h
class StoreCore;   // store_core.h, internal

class Store {
 public:
  // Opens the store in options.data_dir, creating it on first use: drops objects a crash left
  // pending, derives free space from the catalog, opens every device. InvalidArgument for bad
  // options; FailedPrecondition for a catalog that is damaged, missing beside existing devices,
  // or behind the devices' block records, and when too many devices cannot be used.
  static absl::StatusOr<std::unique_ptr<Store>> Open(StoreOptions options);
  // Waits until no read's stripe buffers are pinned by a sink (ByteSink::WritePinned) any more.
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Stores the bytes of `source` as a new object. InvalidArgument for a bad shape, block size or
  // name, or more blocks per stripe than devices; AlreadyExists; FailedPrecondition when too few
  // devices are online; ResourceExhausted when space runs out; Unavailable when a device flush
  // failed (the device is then suspect); DataLoss or Internal when a device write failed. On
  // error nothing is stored (but for a commit of unknown outcome, above). Stripe memory is reserved
  // as the source delivers bytes (ByteSource::Await): a source that delivers little holds little.
  // `interrupt` ends the wait for the first stripe.
  absl::StatusOr<ObjectRecord> Encode(const EncodeParams& params, ByteSource& source,
                                      const Interrupt& interrupt = {});

  // Overwrites bytes [offset, offset + n) of an object with the n bytes of `data`; with `append`
  // the object may grow (offset <= size). Touched stripes get new parity from the EC update of
  // their changed data blocks; new blocks go to new extents, every touched device is flushed,
  // and one catalog transaction switches blocks, size and version (+1) (copy-on-write: readers
  // see the old or the new version, a crash leaves the old one whole). n == 0 changes nothing.
  // NotFound; OutOfRange for an offset past the end, or bytes past it without `append`;
  // DataLoss if a touched stripe cannot be read; ResourceExhausted when space runs out.
  absl::StatusOr<UpdateResult> Update(absl::string_view name, uint64_t offset, ByteSource& data,
                                      bool append, const Interrupt& interrupt = {});

  // Streams bytes [offset, offset + length) of an object (length 0: to the end) to `sink`,
  // rebuilding blocks that are on failed devices, unreadable or corrupt. Bytes that failed
  // their checksum are never passed to the sink. NotFound; OutOfRange for an offset past the
  // end; DataLoss when a stripe has fewer than M good blocks.
  absl::Status Read(absl::string_view name, uint64_t offset, uint64_t length, ByteSink& sink,
                    const Interrupt& interrupt = {});

  // Streams the block_size bytes of block `index` of stripe `stripe` to `sink`; a block that
  // cannot be read or fails its checksum is rebuilt from its stripe (reconstructed = 1).
  // NotFound; OutOfRange for a stripe or index past the object's; DataLoss.
  absl::Status GetBlock(absl::string_view name, uint64_t stripe, uint32_t index, ByteSink& sink,
                        const Interrupt& interrupt = {});

  // An object's health per stripe; `verify` reads every block and checks its checksum, marking
  // the ones that fail. NotFound; `interrupt` is also checked between batches of stripes.
  absl::StatusOr<ObjectStatus> Stat(absl::string_view name, bool with_blocks, bool verify,
                                    const Interrupt& interrupt = {});

  // One page of the committed objects (listing.h: prefix, delimiter, page size, page token),
  // each with its health without per-stripe detail unless `with_health` is false (the counts
  // are then 0). Takes no object lock; an object deleted or updated meanwhile is skipped or
  // measured again, never reported lost because of it. InvalidArgument for a bad page token.
  absl::StatusOr<ObjectListing> List(const ListQuery& query, bool with_health = true);
  // The committed objects and the bytes they hold, counted as they come and go: no catalog read.
  ObjectTotals Totals() const;
  // The degraded and lost stripes now. Reads only the blocks that are corrupt or on a device
  // that is not online, so its cost follows the damage, not the number of objects.
  absl::StatusOr<DamageTotals> Damage();

  // Deletes an object; returns the bytes of device space freed. NotFound.
  absl::StatusOr<uint64_t> Delete(absl::string_view name, const Interrupt& interrupt = {});

  // Checks the blocks of an object (all of them, or as RecoverOptions narrows it) and rebuilds
  // each one that is lost or corrupt onto a healthy device holding no other block of its stripe
  // (copy-on-write). Works one batch of stripes at a time under the object's exclusive lock;
  // `progress` (may be empty) is called after each batch without the lock. A delete meanwhile
  // ends the walk early. NotFound; DataLoss if some stripe has fewer than M good blocks (the
  // others are still repaired); else ResourceExhausted or FailedPrecondition when a rebuilt
  // block found no device outside its stripe with room (the others are still placed);
  // Cancelled when options.cancelled says so.
  absl::StatusOr<RecoverProgress> Recover(
      absl::string_view name, const std::function<void(const RecoverProgress&)>& progress,
      const RecoverOptions& options = {});

  // Memory, DMA arena, read buffers, catalog, file systems and the stripe census, for metrics.
  StoreStats Stats() const;

  // Devices, the catalog's settings and the repair's queries. Lives as long as the Store.
  StoreAdmin& admin() { return *admin_; }

 private:
  explicit Store(std::unique_ptr<StoreCore> core);

  std::unique_ptr<StoreCore> core_;
  std::unique_ptr<StoreAdmin> admin_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_H_
