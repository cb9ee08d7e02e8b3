// Store: ecd's objects on a set of devices. It cuts an object into stripes of M data blocks,
// adds K parity blocks per stripe, places the M+K blocks of a stripe on M+K distinct devices,
// keeps a CRC32C of every block in the catalog, and serves reads (rebuilding lost or corrupt
// blocks on the fly), recovery, stat, list and delete.
//
// Durability: an object's catalog commit happens only after every block of it has been written
// and flushed on its device; until then it is invisible and a crash leaves no trace (its pending
// rows are dropped and its extents are free at the next Open).
// Memory: each request's stripe buffers come out of one budget (StoreOptions::memory_limit);
// an encode holds up to ec_workers + 3 stripes of (M+K) x block size bytes, a read up to 3
// (no more than it reads), an update 2, a recover up to 4 within a quarter of the budget (and
// K blocks to verify parity), a verifying stat 1 (StoreOptions::stripes_in_flight sets the
// encode's, read's and recover's); a wide stripe gets a shallower pipeline so that it fits.
// Encode refuses shapes whose stripe exceeds max_stripe_bytes.
//
// Thread safety: all methods are thread-safe. Reads and stats of an object run concurrently;
// update, delete and recover of an object exclude other requests on that object only.
// Waits: a request waits for its object's lock and for stripe memory; the requests that take an
// Interrupt stop waiting when it fires (DeadlineExceeded or Cancelled, nothing done or held).
#ifndef ECD_LIB_STORE_STORE_H_
#define ECD_LIB_STORE_STORE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lib/catalog/catalog.h"
#include "lib/devices/extent_allocator.h"
#include "lib/devices/fs_space.h"
#include "lib/devices/io_batch.h"
#include "lib/devices/namespace.h"
#include "lib/ec/codec.h"
#include "lib/ec/engine.h"
#include "lib/nvme/dma_map.h"
#include "lib/nvme/host_memory.h"
#include "lib/records/device_label.h"
#include "lib/records/record_keeper.h"
#include "lib/store/interrupt.h"
#include "lib/store/memory_budget.h"
#include "lib/store/object_name.h"

namespace ecd::store {

inline constexpr size_t kMaxStripesInFlight = 64;

struct StoreOptions {
  std::string data_dir;               // Holds catalog.db and devices/nvme<N>.ns.
  int device_count = 8;               // Devices created on first start; more are added later.
  uint64_t device_size = 1ull << 30;  // Bytes per new device.
  uint32_t lba_size = 4096;
  uint32_t default_data_blocks = 4;
  uint32_t default_parity_blocks = 2;
  uint64_t default_block_size = 1ull << 20;
  uint64_t max_stripe_bytes = 512ull << 20;  // (M+K) x block size limit per stripe.
  // Memory of the store's buffers: every device's DMA pool (nvme.host_memory_bytes each) plus
  // the stripe buffers of all requests together stay under memory_limit (0: no limit). A
  // request reserves its stripe buffers before it allocates them and waits, first come first
  // served, while the rest is in use; memory_waiters and memory_wait bound the waiting
  // (MemoryBudget).
  uint64_t memory_limit = 0;
  size_t memory_waiters = 64;
  absl::Duration memory_wait = absl::Seconds(60);
  size_t max_name_length = kDefaultMaxNameLength;  // Bytes; see ValidateObjectName.
  // Stripe buffers one encode, read or recover (and so scrub and rebuild jobs, which recover)
  // keeps at most: the depth of its pipeline (one stripe being filled, sent or rebuilt, the
  // others being encoded, read or written). 0: each picks its own (encode ec_workers + 3, read
  // 3, recover 4); else 2..kMaxStripesInFlight. Deeper pipelines keep more device I/O in flight
  // per request, at (M+K) x block size of memory per stripe. With a memory limit, a request
  // gets at most a quarter of it (at least 2 stripes), so that one request cannot hold the
  // budget while the others wait; a read never more stripes than it reads. A request may get a
  // shallower pipeline than asked for, down to 2 (1 for an encode or read of a stripe too wide
  // for 2).
  size_t stripes_in_flight = 0;
  // An encode or an update flushes the devices it has written to each time it has written this
  // many more bytes (blocks, parity included), besides the flush before its commit that makes
  // it durable. 0: only that one, a flush per object. A device with a volatile write cache then
  // holds about this much of one request's writes unflushed at most, plus the stripes still in
  // flight (an encode counts a stripe once its writes are done), and the last flush has only
  // that much left to do, at the cost of more flushes. (Recover already flushes each batch of 64
  // stripes before committing it.)
  uint64_t flush_bytes = 0;
  // EC engine threads. Each encode keeps ec_workers + 3 stripes in memory by default (see
  // stripes_in_flight), so that every worker encodes a stripe while one is filled and the
  // oldest ones are written.
  int ec_workers = 2;
  bool ec_pin_workers = true;  // ec::EngineOptions::pin_workers.
  // NVMe data path of every device (queue depth, ...). The DMA arena is registered in
  // nvme.dma_map (created when null), so devices opened with it move its runs in place.
  nvme::DeviceOptions nvme;
  // With a memory limit, up to this many bytes of the stripe-memory budget are one DMA arena,
  // mapped at start and registered with every device's io_uring as fixed buffers (as SPDK
  // reserves its DMA memory): stripe buffers are runs of it, moved without copies or per-I/O
  // page pinning, and resident from the start. Stripe buffers beyond it (or when it is
  // fragmented) are mapped per request (resident only while used) and staged through the
  // devices' pools. 0, or no memory limit: no arena. Each device pins the arena when it opens,
  // which grows faster than the arena (12 devices: 0.3 s at 512 MiB, 1.5 s at 1 GiB, 4.9 s at
  // 2 GiB here).
  uint64_t dma_arena_bytes = uint64_t{512} << 20;
  NamespaceFactory namespace_factory;  // Defaults to OpenNvmeNamespace with `nvme`.
  // At start-up, when more devices cannot be used (not opened, cut short, or labelled as
  // another store's or another slot's) than the fewest parity blocks of any stored object,
  // Open refuses and changes nothing: a missing mount or a wrong path is likelier than that
  // many dead disks. true: start anyway, marking them down.
  bool start_with_missing_devices = false;
  // A device whose writes fail this many times in a row (no success between) goes down.
  uint32_t write_errors_to_down = 4;
  // Bytes kept free on each file system holding the catalog or a namespace file. The namespace
  // files are sparse, so the devices' free LBAs overstate what the disk holds: every new block
  // is claimed against the file system's real free space first (FsSpace), and an encode or
  // update that would leave less than this is refused (ResourceExhausted) before it writes; a
  // repair may use half of it. What is left is for the catalog (the WAL of a delete), so that
  // deletes and restarts work on a file system that is otherwise full.
  uint64_t fs_reserve_bytes = uint64_t{256} << 20;
  // Reads a file system's size and free bytes (empty: statvfs, StatFileSystem); tests make the
  // file system smaller than it is.
  std::function<absl::StatusOr<FsStat>(const std::string& path)> fs_stat;
  // Metrics hooks, each may be empty; called on the thread doing the work, so they must be
  // cheap and thread-safe. Every EC task with its kind and latency (ec::EngineOptions), and
  // every catalog commit with its duration (Catalog::SetCommitObserver).
  std::function<void(ec::TaskKind, std::chrono::nanoseconds)> on_ec_task_done;
  std::function<void(std::chrono::nanoseconds)> on_catalog_commit;
};

struct EncodeParams {
  std::string name;
  uint32_t data_blocks = 0;    // 0: the default.
  uint32_t parity_blocks = 0;  // 0: the default.
  ec::MatrixType matrix = ec::MatrixType::kCauchy;
  uint64_t block_size = 0;  // 0: the default.
};

// Where Encode pulls an object's bytes from.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills a prefix of `buffer`; returns the number of bytes, 0 at the end of the object.
  virtual absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) = 0;
  // Waits until Read can return without waiting for whoever feeds the source: true when it
  // will return bytes, false at the end of the object; errors as Read's. Encode and Update call
  // it before they reserve stripe memory, so that a source that delivers nothing holds none.
  // The default, for a source that never waits, returns true at once.
  virtual absl::StatusOr<bool> Await() { return true; }
  // Called once after the last Read, just before the commit; an error abandons the operation
  // as any other would (nothing stored). E.g. a network stream whose end turns out to have been
  // a failure rather than the client's clean close.
  virtual absl::Status BeforeCommit() { return absl::OkStatus(); }
};

// Where Read pushes an object's bytes to.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Called once before Start with the object being read, as committed: its id and version name
  // the bytes served.
  virtual void SetObject(const ObjectRecord& object) {}
  // Called once before any data, with the whole object's size.
  virtual absl::Status Start(uint64_t object_size) = 0;
  // Consecutive bytes of the requested range; `reconstructed` blocks were rebuilt to serve them.
  virtual absl::Status Write(absl::Span<const uint8_t> data, uint32_t reconstructed) = 0;
  // Write for a sink that can pass bytes on without copying them (Read uses it; GetBlock does
  // not). `data` lies in a stripe buffer of the read and stays valid and unchanged for as long
  // as the sink holds a copy of `pin`: the read reuses the buffer only once every copy is gone,
  // and if copies outlive the read, its buffers (and their share of the memory budget) are
  // released when the last one goes. A sink may keep copies after the call and after Finish, but
  // must drop them as it sends, without waiting for the read to go on (the read may be waiting
  // for them). The Store's destructor waits for the last of them. The default copies through
  // Write.
  virtual absl::Status WritePinned(absl::Span<const uint8_t> data, uint32_t reconstructed,
                                   const std::shared_ptr<const void>& pin) {
    return Write(data, reconstructed);
  }
  // True once whoever the sink sends to is gone (a cancelled call): a read waiting for the
  // sink's pins then stops with CANCELLED instead (the pins may only go when the call does).
  // Called from the read's thread, while Write is not running.
  virtual bool Gone() const { return false; }
  // The most bytes of buffers of its own the sink holds while it takes `length` bytes and until
  // Finish returns (messages being filled and sent). Read and GetBlock reserve them from the
  // stripe-memory budget with their stripes.
  virtual uint64_t held_bytes(uint64_t length) const { return 0; }
  // Called once after Start, before Read or GetBlock returns, while the memory of held_bytes is
  // still reserved. `ok`: every byte was written; the sink sends what it buffered and waits
  // until it is sent, and its status is the read's. Not ok: the read failed; the sink may drop
  // what it buffered, must stop using its buffers before it returns, and its status is ignored.
  virtual absl::Status Finish(bool ok) { return absl::OkStatus(); }
};

struct UpdateResult {
  ObjectRecord object;            // As committed: new size, stripe count and version.
  uint64_t bytes_written = 0;     // Bytes taken from the source.
  uint64_t stripes_updated = 0;   // Existing stripes changed through the parity delta.
  uint64_t stripes_appended = 0;  // New stripes encoded for an append.
};

struct BlockStatus {
  BlockRecord record;
  bool healthy = false;
};

struct StripeStatus {
  uint64_t index = 0;
  uint32_t healthy_blocks = 0;
  std::vector<BlockStatus> blocks;  // Filled when asked for.
};

struct ObjectStatus {
  ObjectRecord object;
  uint64_t degraded_stripes = 0;  // Fewer than M+K healthy blocks.
  uint64_t lost_stripes = 0;      // Fewer than M healthy blocks.
  std::vector<StripeStatus> stripes;
};

// What Recover (and so scrub) found and did, so far or in all.
struct RecoverProgress {
  uint64_t stripes_total = 0;
  uint64_t stripes_done = 0;
  uint64_t blocks_checked = 0;
  uint64_t bytes_checked = 0;      // bytes of blocks read back good
  uint64_t blocks_unreadable = 0;  // on a device not online, or the read failed
  uint64_t blocks_corrupt = 0;     // read, but failed their CRC32C
  uint64_t parity_mismatches = 0;  // parity passing its CRC32C but not matching the data
  uint64_t lost_stripes = 0;       // too few good blocks to rebuild the bad ones
  uint64_t blocks_rebuilt = 0;     // written to new extents (rebuilt, relocated or recomputed)
  uint64_t bytes_rebuilt = 0;
  uint64_t blocks_relocated = 0;  // of blocks_rebuilt: good blocks moved because of `evict`
};

struct RecoverOptions {
  // Blocks for which this returns true are moved to another device even when they read back
  // good (their bytes are checked against the stored CRC first); used to evacuate a failing
  // device or a media range a device reported bad. Called with the store's locks not held.
  std::function<bool(const BlockRecord&)> evict;
  // Scrub: also encode each stripe's data and compare the result with its stored parity. A
  // parity block that passes its CRC32C but differs is rewritten: data blocks that pass their
  // CRC32C are what the client wrote, so they decide. Costs K blocks of memory more.
  bool verify_parity = false;
  // true: read and check every block of every stripe, and rebuild what is bad (what `ecctl
  // recover` does). false, a rebuild: touch only the stripes with blocks known to need a new
  // home (on a device that is not online, flagged corrupt, or chosen by `evict`) and read just
  // what those take: the block itself when it reads, else any M good blocks of the stripe, data
  // blocks first. A block found bad on the way is rebuilt too; the others are not checked (the
  // scrubber does that). verify_parity needs every block, so it implies true.
  bool check_all = true;
  // false: only check and count (the corrupt flags of bad blocks are still set); write nothing.
  bool repair = true;
  // Polled between batches of stripes, and while it waits for the object's lock or for memory;
  // when it returns true Recover stops with Cancelled (what was repaired so far stays repaired).
  std::function<bool()> cancelled;
  // Not empty: only these stripes (ascending, no repeats) are looked at; the others are left
  // as they are. The repair planner's batches.
  std::vector<uint64_t> stripes;
  // false: blocks on a device that is down (not failed) are not rebuilt elsewhere: the device
  // may come back within the repair delay. They are still not read.
  bool rebuild_down = true;
};

struct DeviceStatus {
  DeviceRecord record;
  uint64_t used_bytes = 0;  // allocated: blocks, label and block-record log
  uint64_t free_bytes = 0;
  uint64_t metadata_bytes = 0;  // of used_bytes: the label and the block-record log
  uint64_t blocks = 0;
  uint64_t flush_failures = 0;  // failed flushes since ecd started (each made it suspect)
  // The namespace's data-path counters (Namespace::Counters); empty for a failed device.
  std::vector<std::pair<std::string, uint64_t>> counters;
};

class ObjectLocks;    // object_locks.h
struct StripeBuffer;  // stripe_buffer.h
struct StripeSet;     // stripe_buffer.h

class Store {
 public:
  // Opens the store in options.data_dir, creating it on first use: drops objects a crash left
  // pending, derives free space from the catalog, opens every device.
  static absl::StatusOr<std::unique_ptr<Store>> Open(StoreOptions options);
  // Waits until no read's stripe buffers are pinned by a sink (ByteSink::WritePinned) any more.
  ~Store();

  // Stores the bytes of `source` as a new object. InvalidArgument for a bad shape, block size or
  // name, or more blocks per stripe than devices; AlreadyExists; FailedPrecondition when too few
  // devices are online; ResourceExhausted when space runs out; Unavailable when a device flush
  // failed (the device is then suspect); DataLoss or Internal when a device write failed (media
  // error, or another command error). On error nothing is stored.
  // Memory: stripe buffers are reserved as the source delivers bytes (ByteSource::Await), one
  // stripe before the first, then one more for each stripe filled while the earlier ones are
  // still encoded and written, up to the pipeline's depth, and only while the budget has them
  // free at once: a source that delivers little holds little. `interrupt` ends the wait for the
  // first stripe (DeadlineExceeded or Cancelled).
  absl::StatusOr<ObjectRecord> Encode(const EncodeParams& params, ByteSource& source,
                                      const Interrupt& interrupt = {});

  // Overwrites bytes [offset, offset + n) of an object with the n bytes of `data`, across block
  // and stripe boundaries. Without `append` the range must lie inside the object; with it the
  // object may grow (offset <= size). Each touched stripe's new parity comes from the EC update
  // of its changed data blocks (old blocks CRC-checked, rebuilt from the stripe if bad); untouched
  // data blocks are not read; a stripe overwritten whole and new stripes of an append are encoded
  // fresh (nothing read). Copy-on-write: the new
  // blocks go to new extents (on the old block's device when it has room), every touched device
  // is flushed, and one catalog transaction switches the blocks, size, stripe count and version
  // (+1); then the old extents are freed. A crash or error at any point leaves the old version
  // whole and its new extents free. n == 0 changes nothing (the version stays). Holds the
  // object's lock exclusively: readers see the old or the new version, never a mix; the lock
  // and the memory (two stripes) are taken once `data` has bytes (ByteSource::Await), so that a
  // source that delivers nothing holds neither. NotFound; OutOfRange for an
  // offset past the end, or for bytes past the end without `append`; DataLoss if a touched
  // stripe cannot be read; ResourceExhausted when space runs out; DeadlineExceeded or Cancelled
  // when `interrupt` fires while it waits for the lock or for memory.
  absl::StatusOr<UpdateResult> Update(absl::string_view name, uint64_t offset, ByteSource& data,
                                      bool append, const Interrupt& interrupt = {});

  // Streams bytes [offset, offset + length) of an object (length 0: to the end) to `sink`,
  // rebuilding blocks that are on failed devices, unreadable or corrupt. NotFound; OutOfRange
  // for an offset past the end; DataLoss when a stripe has fewer than M good blocks. Bytes that
  // failed their checksum are never passed to the sink. DeadlineExceeded or Cancelled when
  // `interrupt` fires while it waits for the object's lock or for memory.
  absl::Status Read(absl::string_view name, uint64_t offset, uint64_t length, ByteSink& sink,
                    const Interrupt& interrupt = {});

  // Streams the block_size bytes of block `index` of stripe `stripe` to `sink`; a block that
  // cannot be read or fails its checksum is rebuilt from its stripe instead (reconstructed = 1).
  // NotFound; OutOfRange for a stripe or index past the object's; DataLoss; `interrupt` as
  // Read's.
  absl::Status GetBlock(absl::string_view name, uint64_t stripe, uint32_t index, ByteSink& sink,
                        const Interrupt& interrupt = {});

  // Reports an object's health per stripe; `verify` reads every block and checks its checksum,
  // marking the ones that fail (a stripe's blocks are read together). `interrupt` ends the waits
  // for the object's lock and for memory, and is checked between batches of stripes
  // (DeadlineExceeded or Cancelled).
  absl::StatusOr<ObjectStatus> Stat(absl::string_view name, bool with_blocks, bool verify,
                                    const Interrupt& interrupt = {});

  // All committed objects with their health, without per-stripe detail. Takes no object lock;
  // an object deleted or updated while it is measured is skipped or measured again, never
  // reported with lost stripes it does not have.
  absl::StatusOr<std::vector<ObjectStatus>> List();

  // Deletes an object; returns the bytes of device space freed. DeadlineExceeded or Cancelled
  // (nothing deleted) when `interrupt` fires while it waits for the object's lock.
  absl::StatusOr<uint64_t> Delete(absl::string_view name, const Interrupt& interrupt = {});

  // Reads and checks every block of an object and rebuilds each one that is lost or corrupt onto
  // a healthy device holding no other block of its stripe (its own device first, copy-on-write).
  // Works one batch of stripes at a time under the object's exclusive lock; reads and updates
  // run between batches, and `progress` (may be empty) is called after each batch without the
  // lock (it may sleep to keep a rate). A delete meanwhile ends the walk early. DataLoss if some
  // stripe has fewer than M good blocks (the others are still repaired).
  absl::StatusOr<RecoverProgress> Recover(
      absl::string_view name, const std::function<void(const RecoverProgress&)>& progress,
      const RecoverOptions& options = {});

  // Names of objects with a block on `device` overlapping [first_lba, first_lba + lba_count)
  // (lba_count 0: anywhere on the device).
  absl::StatusOr<std::vector<std::string>> ObjectsOnDevice(uint32_t device, uint64_t first_lba,
                                                           uint64_t lba_count) {
    return catalog_->ObjectsOnDevice(device, first_lba, lba_count);
  }
  uint32_t lba_size() const { return options_.lba_size; }
  // Small persistent settings of the daemon's own components (the catalog's meta table; keys
  // are listed in docs/catalog.md).
  absl::StatusOr<std::optional<std::string>> GetMeta(absl::string_view key) {
    return catalog_->GetMeta(key);
  }
  absl::Status SetMeta(absl::string_view key, absl::string_view value) {
    return catalog_->SetMeta(key, value);
  }
  absl::Status DeleteMeta(absl::string_view key) { return catalog_->DeleteMeta(key); }
  // Every meta key starting with `prefix`, with its value, in key order.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MetaWithPrefix(
      absl::string_view prefix) {
    return catalog_->MetaWithPrefix(prefix);
  }

  absl::StatusOr<std::vector<DeviceStatus>> ListDevices();
  // The file systems holding the catalog and the namespace files: their size, free bytes, the
  // reserve and the bytes promised to writes in progress. Never fails (a file system that cannot
  // be stat'ed shows 0 bytes).
  std::vector<FileSystemUsage> FileSystems() const { return space_->Usage(); }
  CatalogStats catalog_stats() const { return catalog_->stats(); }
  // The stripe buffers' budget (its limit, what is reserved and waiting), for metrics.
  const MemoryBudget& memory_budget() const { return *budget_; }
  // The DMA arena (StoreOptions::dma_arena_bytes): its size and free bytes (0 and 0 without one),
  // and the stripe buffers that found no run of it long enough and were mapped on their own.
  struct ArenaStats {
    uint64_t bytes = 0;
    uint64_t free_bytes = 0;
    uint64_t fallbacks = 0;
  };
  ArenaStats arena_stats() const;
  // Stripe-buffer sets of reads: `in_reads`, one per read in progress that holds its stripe
  // buffers (not one still waiting for memory, nor GetBlock), and `after_reads`, one per read
  // that returned while its sink still pins its buffers (ByteSink::WritePinned: gRPC
  // still sending from them, to a slow client). Their memory stays reserved from the budget
  // until the last pin goes.
  struct ReadBufferSets {
    int in_reads = 0;
    int after_reads = 0;
  };
  ReadBufferSets read_buffer_sets() const;
  // kOnline, kFailing or kFailed. kOnline reopens the namespace of a device that is not
  // online and checks its label: a blank, foreign or cut-short namespace is refused
  // (FailedPrecondition; ReplaceDevice takes a blank one). A device without a label yet (one
  // that could not be opened when labels came) is labelled once it opens.
  // With `only_from`, the change is made only if the device is in that state when the change
  // runs (FailedPrecondition otherwise): a compare-and-set against operators' changes.
  absl::StatusOr<DeviceStatus> SetDeviceState(uint32_t id, DeviceState state,
                                              std::optional<DeviceState> only_from = std::nullopt);
  // Takes an online or failing device out of service without failing it: its blocks are not
  // read or written, and not rebuilt until the repair planner fails it after its delay. The time
  // is stored, so a restart keeps the delay running. FailedPrecondition for a failed device.
  absl::StatusOr<DeviceStatus> MarkDeviceDown(uint32_t id, const std::string& reason);
  // Puts a new blank namespace in the slot of a failed or down device: the old namespace file
  // is removed and created anew with a label, every block still recorded on the device is
  // marked corrupt (the repair rebuilds it, onto this device when it has room), and the device
  // is online. FailedPrecondition for an online or failing device (fail it first).
  absl::StatusOr<DeviceStatus> ReplaceDevice(uint32_t id);
  // Marks down each device whose writes have failed StoreOptions::write_errors_to_down times in
  // a row since it was last checked; returns their ids.
  std::vector<uint32_t> DownDevicesWithFailingWrites();
  // The devices as the store holds them now, without the catalog's block counts.
  std::vector<DeviceRecord> DeviceRecords();
  // Stripes of committed objects by parity count K, kept as objects are stored, updated and
  // deleted (no scan).
  std::map<uint32_t, uint64_t> StripesByParity() const;
  // Pages of the stripes the repair must look at (Catalog::StripesWithCorruptBlocks and
  // Catalog::StripesOnDevice).
  absl::StatusOr<StripePage> StripesWithCorruptBlocks(const StripeCursor& after, size_t max) {
    return catalog_->StripesWithCorruptBlocks(after, max);
  }
  absl::StatusOr<StripePage> StripesOnDevice(const DeviceRange& range, const StripeCursor& after,
                                             size_t max) {
    return catalog_->StripesOnDevice(range, after, max);
  }
  // Copies the catalog, consistent as of one moment, to a new SQLite database at `path`
  // (Catalog::Backup). REQUIRES: nothing else uses `path`.
  absl::Status BackupCatalog(const std::string& path) { return catalog_->Backup(path); }
  // The store's id (catalog meta `store_id`), written in every device's label.
  const std::string& store_id() const { return store_id_; }

  // Called on the thread that saw it whenever something may need repair: a block found corrupt
  // or unreadable, a device's state changed (then with the state-change lock held: the listener
  // must not change a device's state itself), a device's writes failing (then on an I/O
  // completion thread). Must be cheap and must not block: the repair planner only notes it and
  // wakes up. Setting another listener (or none) waits for calls of the old one in progress.
  void SetRepairListener(std::function<void()> fn);

  // Called after the store itself marks a device failing (suspect) because a flush on it
  // failed, with the device and why; the daemon queues the device's evacuation. Runs on the
  // thread of the request that saw the failure, with no store lock held.
  void SetSuspectListener(std::function<void(uint32_t device, const std::string& reason)> fn);

 private:
  // One call of a flow, in the flow's own file (encode.cc, read.cc, update.cc, recover.cc).
  friend class EncodeFlow;
  friend class ReadFlow;
  friend class UpdateFlow;
  friend class RecoverFlow;
  friend class StripeLoad;  // One LoadBlocks call (stripe_loader.cc).

  struct Device;
  // Reads whose stripe buffers a sink may still pin (Store::Read); ~Store waits for none.
  mutable std::mutex pinned_mu_;
  std::condition_variable pinned_gone_;
  int pinned_sets_ = 0;    // Guarded by pinned_mu_.
  int outlived_sets_ = 0;  // Of pinned_sets_, those whose read has returned. Guarded likewise.

  explicit Store(StoreOptions options);
  absl::Status Init();
  absl::Status InitMemory(size_t device_count);
  // Init's census of used space: marks every block the catalog references, every device label
  // and every record log region used in its device's allocator. FailedPrecondition when the
  // catalog names an unknown device or two of them overlap.
  absl::Status MarkUsedSpace();

  absl::StatusOr<std::shared_ptr<const ec::Codec>> CodecFor(ec::MatrixType type, int data,
                                                            int parity);
  uint64_t LbasPerBlock(uint64_t block_size) const;
  // `depth` stripes of `unit` bytes, or fewer so that they and `extra` bytes fit a quarter of
  // the memory limit, but at least 2. REQUIRES: depth >= 2.
  size_t WithinQuarter(size_t depth, uint64_t unit, uint64_t extra = 0) const;
  // The stripes an encode's or read's pipeline asks for, of `unit` bytes each: `own` (the
  // request's default depth), or StoreOptions::stripes_in_flight when set, WithinQuarter. The
  // memory budget may still give it fewer.
  size_t PipelineDepth(size_t own, uint64_t unit) const;
  // The stripe buffers of one request, one per entry of `blocks` (its block count), each block
  // of `block_size` bytes: reserved from the budget (waiting for it until `interrupt` fires),
  // then allocated. `extra` more bytes are reserved with the stripes (a sink's own buffers:
  // held_bytes).
  absl::StatusOr<StripeSet> AllocateStripes(const std::vector<int>& blocks, uint64_t block_size,
                                            uint64_t extra = 0, const Interrupt& interrupt = {});
  // Adds one buffer of `blocks` blocks to `set` if the budget has its memory free at once
  // (MemoryBudget::TryReserve); returns it, or null.
  StripeBuffer* GrowStripes(StripeSet& set, int blocks, uint64_t block_size);

  // Block I/Os in flight together (a stripe's writes, or a batch of its reads): a status per
  // block, the namespaces held until the I/Os complete (null: that block's I/O never started),
  // and the batch that tracks them. The destructor waits for every I/O (the buffers must outlive
  // it); `batch` is the last member, so it is destroyed (waited for) first.
  struct BlockIo {
    std::vector<absl::Status> status;
    std::vector<std::shared_ptr<Namespace>> devices;
    IoBatch batch;
    // Sizes status (all OK) and devices (all null) for n blocks.
    void Reset(size_t n);
    // Waits for every I/O, lets the namespaces go and returns the first error.
    absl::Status Finish();
  };
  // The writes of one stripe's blocks.
  using StripeWrite = BlockIo;
  // Places the M+K blocks of stripe `stripe` on distinct online devices: allocates an extent on
  // each and appends their records (index, device, LBAs; no CRC yet) to `records`. On error
  // (ResourceExhausted) nothing is appended and nothing stays allocated.
  absl::Status PlaceStripe(const ObjectRecord& object, uint64_t stripe,
                           std::vector<BlockRecord>& records);
  // Resolves the namespace of each of `blocks` (held in write.devices until Finish) and marks
  // its device in `touched`; sizes write.status. Unavailable when a device is gone.
  absl::Status PrepareWrites(absl::Span<const BlockRecord> blocks, std::vector<bool>& touched,
                             StripeWrite& write);
  // Sets the CRC32C of every block i of `blocks` (checksums[i] when given, as the encode
  // computed them; else from buffer.block(i)) and starts its write on `write` (prepared by
  // PrepareWrites). Takes no store lock, so it may run on any thread (the encode path runs it on
  // the EC worker that encoded the stripe); it may wait for free DMA pages of a device. Write
  // errors land in write.status. REQUIRES: checksums empty or as long as blocks.
  void StartBlockWrites(StripeBuffer& buffer, absl::Span<BlockRecord> blocks, StripeWrite& write,
                        absl::Span<const uint32_t> checksums = {});
  // PlaceStripe, PrepareWrites and StartBlockWrites of one encoded stripe, its records appended
  // to `records`. An error may leave some writes started: `write` must still be finished (or
  // destroyed) before the buffer is reused.
  absl::Status StartWriteStripe(const ObjectRecord& object, uint64_t stripe, StripeBuffer& buffer,
                                std::vector<BlockRecord>& records, std::vector<bool>& touched,
                                StripeWrite& write);
  // StartWriteStripe, then waits for the writes.
  absl::Status WriteStripe(const ObjectRecord& object, uint64_t stripe, StripeBuffer& buffer,
                           std::vector<BlockRecord>& records, std::vector<bool>& touched);
  enum class BlockRead { kGood, kUnreadable, kCorrupt };
  // Block reads in flight together: StartReads starts blocks[j] into outs[j] for every j,
  // FinishReads waits for them and reports on each one. The destructor waits too.
  struct BlockReads {
    std::vector<int> indices;  // in the stripe, for the caller
    std::vector<const BlockRecord*> blocks;
    std::vector<absl::Span<uint8_t>> outs;
    // Per block, set before its completion: 1 when its bytes failed its CRC32C.
    std::vector<uint8_t> checksum_failed;
    BlockIo io;  // last: destroyed (waited for) first
  };
  // Each read's bytes are checked against the block's CRC32C as soon as the read completes, on
  // the device's completion thread: the checks of a stripe's blocks run in parallel, beside the
  // caller, while the bytes are still in cache. REQUIRES: the blocks outlive FinishReads.
  void StartReads(const ObjectRecord& object, BlockReads& reads);
  // kUnreadable when a block is null, its device is not online or the read failed, kCorrupt
  // when its bytes fail the block's CRC32C. Marks bad blocks corrupt in the catalog.
  std::vector<BlockRead> FinishReads(const ObjectRecord& object, BlockReads& reads);
  // StartReads and FinishReads of one block.
  BlockRead ReadBlock(const ObjectRecord& object, const BlockRecord& b, absl::Span<uint8_t> out);
  // Starts the first reads LoadBlocks needs for blocks `need` of a stripe: those not flagged
  // corrupt on online devices, and when some of `need` cannot be read so, other blocks of the
  // stripe to make M.
  std::unique_ptr<BlockReads> StartLoad(const ObjectRecord& object,
                                        const std::vector<const BlockRecord*>& by_index,
                                        const std::vector<int>& need, StripeBuffer& buffer);
  // Makes blocks `need` of stripe `stripe` good in `buffer`: finishes `first` (StartLoad's
  // reads; started here when null), and when some of `need` are bad reads other blocks of the
  // stripe, as many at a time as are missing, until M are good (blocks flagged corrupt last),
  // then rebuilds the bad ones and checks the rebuilt bytes against their recorded CRC. Returns
  // the indices it rebuilt. DataLoss when that is impossible; `outcome` (e.g. " Nothing was
  // changed.") is put into the message before the advice.
  // With `report`, blocks outside `need` that read bad on the way are rebuilt too (and
  // returned with the others), and the reads are counted there.
  struct LoadReport {
    bool repair = true;          // in: false leaves the catalog's corrupt flags as they are
    uint64_t blocks_read = 0;    // reads finished (a block reread as a last resort counts twice)
    uint64_t good_reads = 0;     // of those, the ones that passed their CRC32C
    uint64_t corrupt_reads = 0;  // reads that failed the CRC32C
    std::vector<int> read;       // the blocks read, each once
    std::vector<int> found_bad;  // blocks outside `need` that read bad
  };
  absl::StatusOr<std::vector<int>> LoadBlocks(const ObjectRecord& object, uint64_t stripe,
                                              const std::shared_ptr<const ec::Codec>& codec,
                                              const std::vector<const BlockRecord*>& by_index,
                                              const std::vector<int>& need, StripeBuffer& buffer,
                                              absl::string_view outcome,
                                              std::unique_ptr<BlockReads> first = nullptr,
                                              LoadReport* report = nullptr);
  // Rebuilds blocks `wanted` of `buffer` from blocks `available` (ascending), then checks each
  // rebuilt block that the catalog has against its recorded CRC32C. Returns the first index whose
  // bytes fail it (more blocks are damaged than their checksums show), else -1.
  absl::StatusOr<int> RebuildInBuffer(const std::shared_ptr<const ec::Codec>& codec,
                                      const std::vector<const BlockRecord*>& by_index,
                                      StripeBuffer& buffer, const std::vector<int>& available,
                                      const std::vector<int>& wanted);
  // What Recover found in one stripe whose reads were started into `buffer`; the counts go to
  // the progress.
  struct StripeFindings {
    bool lost = false;          // too few good blocks: nothing was rebuilt
    std::vector<int> bad;       // unreadable, corrupt or missing: rebuilt in the buffer, their
                                // bytes checked against their recorded CRC32C
    std::vector<int> evicted;   // read good, but must move off their device anyway
    std::vector<int> mismatch;  // good parity that differs from the data's encoding: recomputed
  };
  // Recover's rebuild (RecoverOptions::check_all false): LoadBlocks of blocks `need` of the
  // stripe, of which `evict` are chosen to move.
  absl::StatusOr<StripeFindings> RebuildStripe(const ObjectRecord& object, uint64_t stripe,
                                               const std::shared_ptr<const ec::Codec>& codec,
                                               const std::vector<const BlockRecord*>& by_index,
                                               const std::vector<int>& need,
                                               const std::vector<int>& evict, StripeBuffer& buffer,
                                               std::unique_ptr<BlockReads> reads, bool repair,
                                               RecoverProgress& p);
  // Recover's full check: finishes `reads` (every block of the stripe) and rebuilds the bad
  // blocks from the good ones.
  absl::StatusOr<StripeFindings> CheckStripe(const ObjectRecord& object, uint64_t stripe,
                                             const std::shared_ptr<const ec::Codec>& codec,
                                             const std::vector<const BlockRecord*>& by_index,
                                             StripeBuffer& buffer, BlockReads& reads,
                                             const RecoverOptions& options, RecoverProgress& p);
  // Encodes the stripe's data in `buffer` into `parity` and overwrites each good parity block
  // of the buffer that differs, adding it to `found.mismatch`.
  absl::Status VerifyParity(const ObjectRecord& object, uint64_t stripe,
                            const std::shared_ptr<const ec::Codec>& codec, StripeBuffer& buffer,
                            StripeBuffer& parity, bool repair, StripeFindings& found,
                            RecoverProgress& p);
  // Allocates a new extent for a rewritten block `old`: on its own device if that is online and
  // has room, else on the emptiest online device with `occupied` 0 (a device holding no other
  // block of the stripe). With !allow_same_device the block must leave its device (evacuation).
  // The extent is claimed on its file system for `use` (FsSpace::Claim). Updates `occupied`.
  // FailedPrecondition when every online device holds a block of the stripe (none is outside
  // it); ResourceExhausted when none outside it has room, or (IsFileSystemFull) when its file
  // system is full. `object` names the block's object in the message.
  absl::StatusOr<BlockRecord> AllocateCopy(absl::string_view object, const BlockRecord& old,
                                           std::map<uint32_t, int>& occupied,
                                           bool allow_same_device = true,
                                           SpaceUse use = SpaceUse::kNewData);
  // Online or failing: read from (and, online, written to).
  bool DeviceOnline(uint32_t id);
  bool DeviceDown(uint32_t id);
  // The device's namespace (null if it could not be opened); with `online_only`, null unless
  // the device is online. The handle stays valid for the caller even if the device is reopened.
  std::shared_ptr<Namespace> NamespaceOf(uint32_t id, bool online_only);
  // Flushes every device marked in `touched`. A device whose flush fails is marked suspect
  // (MarkSuspect) and the call fails: the failure is never retried into a success.
  absl::Status FlushDevices(const std::vector<bool>& touched);
  // Adds `wrote` bytes to `unflushed`; once it reaches StoreOptions::flush_bytes (when set),
  // flushes `touched` (FlushDevices) and starts counting again.
  absl::Status FlushEvery(uint64_t wrote, uint64_t& unflushed, const std::vector<bool>& touched);
  void MarkSuspect(uint32_t id, const std::string& reason);
  // Tells the repair listener that something may need repair.
  void NotifyRepair();
  // Wraps `done` of a write on `device`: counts its failures in a row (a success resets them).
  Namespace::Done TrackWrite(uint32_t device, Namespace::Done done);
  // Opens the namespace of `r` (creating it when `create`) and checks its size and label
  // (Device::label_lba, when it has one). An error says why the device cannot be used.
  // `label` (when not null) gets the label read.
  absl::StatusOr<std::unique_ptr<Namespace>> OpenDevice(const DeviceRecord& r, bool create,
                                                        std::optional<uint64_t> label_lba,
                                                        DeviceLabel* label = nullptr);
  // Init's device pass: opens every device of `records`, refuses to start when too many
  // cannot be used (StoreOptions::start_with_missing_devices), marks those down and those that
  // came back online; reads the stripe census the store keeps from then on.
  absl::Status OpenDevices(std::vector<DeviceRecord>& records, const std::set<uint32_t>& new_ids);
  // Writes a label to every open device that has none yet (a new one, or one from before
  // labels), on an LBA of its own, and records where.
  absl::Status LabelDevices();
  // Writes a label on a newly allocated LBA of `d` (nothing, with a warning, when it is full).
  absl::Status LabelDevice(Device& d);
  absl::Status WriteLabel(uint32_t id, uint64_t lba, const RecordLogPlace& log);

  // Block records (store_records.cc, docs/formats.md "Block records").
  // Refuses a catalog that is missing or empty while devices/ holds namespaces, or that cannot be
  // opened, with what to do; else opens it into catalog_.
  absl::Status OpenCatalog();
  // Opens the record log of every open device whose label has one; refuses a catalog behind
  // what those logs say was committed, and a damaged one after an unclean stop. Makes records_.
  absl::Status OpenRecordLogs();
  // The start-up refusal for `damage` (IsCatalogDamage) found in the catalog: FailedPrecondition
  // naming the catalog and how to rebuild it.
  absl::Status RefuseDamagedCatalog(const absl::Status& damage) const;
  // Gives every open device without a record log one (a new device, or one from before block
  // records: allocated from its free LBAs, label rewritten), and snapshots the logs that need it
  // (after an unclean stop, or a device that missed operations); marks them running. A device
  // whose log cannot be written is marked suspect (MarkSuspect) and keeps no log.
  absl::Status PrepareRecordLogs();
  // PrepareRecordLogs for one device. An error says what could not be written.
  absl::Status PrepareRecordLog(Device& d);
  // Makes the record log at `place` of device `id` take its space on the file system now, so
  // that record writes (a delete's tombstones on a full disk) do not fail for want of it. A
  // failure is logged, not returned: the writes then fail as any write does.
  void ReserveRecordLog(uint32_t id, Namespace& ns, const RecordLogPlace& place);
  // Creates the record log of `d` (in its old place when it had one, else in a newly allocated
  // region), records the place in its label, and writes its first snapshot.
  absl::Status CreateRecordLog(Device& d);
  // After `d`'s namespace was opened again (`device online`): opens its record log at
  // `labelled` (its label's place) and snapshots it, for the operations it missed; creates one
  // when it has none or it cannot be read.
  absl::Status ReopenRecordLog(Device& d, const RecordLogPlace& labelled);
  // A free region of `d` for a new record log; empty when none fits.
  RecordLogPlace AllocateRecordLog(Device& d);
  void CountStripes(uint32_t parity, int64_t delta);
  // Returns extents to their devices' allocators and ends their space claims.
  void FreeExtents(absl::Span<const BlockRecord> blocks);
  // FreeExtents of extents that may hold bytes no catalog row points at (a write that failed, or
  // a request that did not commit), punched first (Deallocate) on devices that are online or
  // failing, so that the file system gets the space back. REQUIRES: no write to them in flight.
  void DiscardExtents(absl::Span<const BlockRecord> blocks);
  // Start-up: punches every free extent of an open device that still takes space in its
  // namespace file (writes a crash or a power cut left behind, an encode dropped at start-up,
  // deletes whose punch did not happen), found with Namespace::AllocatedRanges.
  void ReclaimFreeSpace();
  absl::StatusOr<ObjectStatus> Health(const ObjectRecord& object, bool with_blocks, bool verify,
                                      bool per_stripe, const Interrupt& interrupt = {});

  const StoreOptions options_;
  // The DMA arena, if any, and its registration: made by Init before any device opens; the
  // last to go, after every device and stripe buffer.
  std::unique_ptr<nvme::HostMemory> arena_;
  nvme::DmaRegistration arena_registration_;
  std::atomic<uint64_t> arena_fallbacks_{0};
  std::unique_ptr<ec::Engine> engine_;
  std::unique_ptr<MemoryBudget> budget_;  // Made by Init, once the devices are known.
  std::unique_ptr<Catalog> catalog_;

  // Claims on the file systems under the data dir; made by Init before any device opens, shared
  // with every device's namespace (which ends a claim when its write completes).
  std::shared_ptr<FsSpace> space_;

  std::mutex state_mu_;  // Serializes SetDeviceState calls.
  std::mutex mu_;        // Guards devices_' state, namespaces and allocators, and codecs_.
  std::vector<std::unique_ptr<Device>> devices_;
  std::map<std::tuple<int, int, int>, std::shared_ptr<const ec::Codec>> codecs_;
  std::function<void(uint32_t, const std::string&)> suspect_listener_;  // guarded by mu_
  std::function<void()> repair_listener_;                               // guarded by mu_
  int listener_calls_ = 0;                                              // guarded by mu_
  std::condition_variable listener_idle_;
  std::string store_id_;  // Set by Init.
  mutable std::mutex census_mu_;
  std::map<uint32_t, uint64_t> stripes_by_parity_;  // guarded by census_mu_

  std::unique_ptr<ObjectLocks> locks_;
  // Block records: made by Init (OpenRecordLogs).
  std::unique_ptr<RecordKeeper> records_;
  // Logs opened at start-up that must be snapshot (unclean stop, missed operations).
  std::set<uint32_t> stale_logs_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_H_
