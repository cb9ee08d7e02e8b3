// StoreCore: the state and the shared machinery behind the Store facade (store.h) and the
// StoreAdmin (store_admin.h): devices, catalog, memory, codecs and block I/O. Its public methods
// implement the facades' methods of the same names, whose contracts are stated there; the flows
// (encode.cc, read.cc, update.cc, recover.cc, objects.cc) are friends that use its private parts.
// Internal to lib/store.
//
// Thread safety: as Store's. mu_ guards the devices' state, namespaces and allocators and the
// codecs; state_mu_ serializes device state changes; census_mu_ the stripe census; pinned_mu_
// the read buffer sets still pinned by sinks. Ownership: owns the devices, the catalog, the
// memory budget and the DMA arena; owned by its Store, whose StoreAdmin refers to it.
#ifndef ECD_LIB_STORE_STORE_CORE_H_
#define ECD_LIB_STORE_STORE_CORE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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
#include "lib/catalog/fenced_catalog.h"
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
#include "lib/store/byte_stream.h"
#include "lib/store/interrupt.h"
#include "lib/store/listing.h"
#include "lib/store/memory_budget.h"
#include "lib/store/object_name.h"
#include "lib/store/store_options.h"
#include "lib/store/store_types.h"
#include "lib/util/mutex.h"

namespace ecd::store {

class ObjectLocks;    // object_locks.h
struct StripeBuffer;  // stripe_buffer.h
struct StripeSet;     // stripe_buffer.h
struct StripeRef;     // store_flows.h

class StoreCore {
 public:
  // Store::Open's checks and start-up.
  static absl::StatusOr<std::unique_ptr<StoreCore>> Open(StoreOptions options);
  // Waits until no read's stripe buffers are pinned by a sink; closes the record logs cleanly.
  ~StoreCore();

  // The data plane (store.h).
  absl::StatusOr<ObjectRecord> Encode(const EncodeParams& params, ByteSource& source,
                                      const Interrupt& interrupt);
  absl::StatusOr<UpdateResult> Update(absl::string_view name, uint64_t offset, ByteSource& data,
                                      bool append, const Interrupt& interrupt);
  absl::Status Read(absl::string_view name, uint64_t offset, uint64_t length, ByteSink& sink,
                    const Interrupt& interrupt);
  absl::Status GetBlock(absl::string_view name, uint64_t stripe, uint32_t index, ByteSink& sink,
                        const Interrupt& interrupt);
  absl::StatusOr<ObjectStatus> Stat(absl::string_view name, bool with_blocks, bool verify,
                                    const Interrupt& interrupt);
  absl::StatusOr<ObjectListing> List(const ListQuery& query, bool with_health);
  ObjectTotals Totals() const;
  absl::StatusOr<DamageTotals> Damage();
  absl::StatusOr<uint64_t> Delete(absl::string_view name, const Interrupt& interrupt);
  absl::StatusOr<RecoverProgress> Recover(
      absl::string_view name, const std::function<void(const RecoverProgress&)>& progress,
      const RecoverOptions& options);
  StoreStats Stats() const;
  uint64_t RequestsWaitingForMemory() const { return budget_->waiting(); }

  // Administration (store_admin.h).
  absl::StatusOr<std::vector<DeviceStatus>> ListDevices();
  absl::StatusOr<DeviceStatus> SetDeviceState(uint32_t id, DeviceState state,
                                              std::optional<DeviceState> only_from);
  absl::StatusOr<DeviceStatus> MarkDeviceDown(uint32_t id, const std::string& reason);
  absl::StatusOr<DeviceStatus> ReplaceDevice(uint32_t id);
  std::vector<uint32_t> DownDevicesWithFailingWrites();
  std::vector<DeviceRecord> DeviceRecords();
  std::map<uint32_t, uint64_t> StripesByParity() const;
  void SetRepairListener(std::function<void()> fn);
  void SetSuspectListener(std::function<void(uint32_t device, const std::string& reason)> fn);
  // The catalog behind its fence (FencedCatalog); lives as long as this.
  ObjectCatalog& catalog() { return *catalog_; }
  const std::string& store_id() const { return store_id_; }
  uint32_t lba_size() const { return options_.lba_size; }

 private:
  // One call of a flow, in the flow's own file (encode.cc, read.cc, update.cc, recover.cc).
  friend class EncodeFlow;
  friend class ReadFlow;
  friend class UpdateFlow;
  friend class RecoverFlow;
  friend class StripeLoad;  // One LoadBlocks call (stripe_loader.cc).

  struct Device;
  // Reads whose stripe buffers a sink may still pin (Store::Read); ~StoreCore waits until there
  // are none.
  mutable Mutex pinned_mu_;
  CondVar pinned_gone_;
  int pinned_sets_ ABSL_GUARDED_BY(pinned_mu_) = 0;
  int outlived_sets_ ABSL_GUARDED_BY(pinned_mu_) =
      0;  // Of pinned_sets_, those whose read has returned.

  explicit StoreCore(StoreOptions options);
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
  // request's default depth), or, when set, StoreOptions::stripes_in_flight cut by WithinQuarter.
  // The memory budget may still give it fewer.
  size_t PipelineDepth(size_t own, uint64_t unit) const;
  // The stripe buffers of one request, one per entry of `blocks` (its block count), each block
  // of `block_size` bytes: reserved from the budget (waiting for it until `interrupt` fires),
  // then allocated. `extra` more bytes are reserved with the stripes (a sink's own buffers:
  // held_bytes). Errors: MemoryBudget::Reserve's; ResourceExhausted when a buffer's memory
  // cannot be mapped.
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
  // REQUIRES: `touched` has an entry per device.
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
  // kUnreadable when a block is null, its row's LBA count does not fit its object, its device is
  // neither online nor failing, or the read failed; kCorrupt when its bytes fail the block's
  // CRC32C (or the device reports DataLoss). Flags each block whose read failed corrupt in the
  // catalog and, when it flagged one, tells the repair listener (NotifyRepair).
  std::vector<BlockRead> FinishReads(const ObjectRecord& object, BlockReads& reads);
  // StartReads and FinishReads of one block.
  BlockRead ReadBlock(const ObjectRecord& object, const BlockRecord& b, absl::Span<uint8_t> out);
  // Starts the first reads LoadBlocks needs for blocks `need` of a stripe: those not flagged
  // corrupt on online devices, and when some of `need` cannot be read so, other blocks of the
  // stripe to make M.
  std::unique_ptr<BlockReads> StartLoad(const StripeRef& at, const std::vector<int>& need,
                                        StripeBuffer& buffer);
  // Makes blocks `need` of stripe `at` good in `buffer`: finishes `first` (StartLoad's
  // reads; started here when null), and when some of `need` are bad reads other blocks of the
  // stripe, as many at a time as are missing, until M are good (blocks flagged corrupt last),
  // then rebuilds the bad ones and checks the rebuilt bytes against their recorded CRC. Returns
  // the indices it rebuilt. DataLoss when that is impossible, or when a block of `need` has no
  // catalog row; `outcome` (e.g. " Nothing was changed.") is put into the message before the
  // advice. Errors of the EC engine are returned as they are.
  // With `report`, blocks outside `need` that read bad on the way are rebuilt too (and
  // returned with the others), and the reads are counted there.
  struct LoadReport {
    bool repair = true;          // in: false keeps the flag of a flagged block that reads good
    uint64_t blocks_read = 0;    // reads finished (a block reread as a last resort counts twice)
    uint64_t good_reads = 0;     // of those, the ones that passed their CRC32C
    uint64_t corrupt_reads = 0;  // reads that failed the CRC32C
    std::vector<int> read;       // the blocks read, each once
    std::vector<int> found_bad;  // blocks outside `need` that read bad
  };
  absl::StatusOr<std::vector<int>> LoadBlocks(const StripeRef& at, const std::vector<int>& need,
                                              StripeBuffer& buffer, absl::string_view outcome,
                                              std::unique_ptr<BlockReads> first = nullptr,
                                              LoadReport* report = nullptr);
  // Rebuilds blocks `wanted` of `buffer` from blocks `available` (ascending), then checks each
  // rebuilt block that the catalog has against its recorded CRC32C. Returns the first index whose
  // bytes fail it (more blocks are damaged than their checksums show), else -1. Errors: the EC
  // engine's.
  absl::StatusOr<int> RebuildInBuffer(const StripeRef& at, StripeBuffer& buffer,
                                      const std::vector<int>& available,
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
  absl::StatusOr<StripeFindings> RebuildStripe(const StripeRef& at, const std::vector<int>& need,
                                               const std::vector<int>& evict, StripeBuffer& buffer,
                                               std::unique_ptr<BlockReads> reads, bool repair,
                                               RecoverProgress& p);
  // Recover's full check: finishes `reads` (every block of the stripe) and rebuilds the bad
  // blocks from the good ones.
  absl::StatusOr<StripeFindings> CheckStripe(const StripeRef& at, StripeBuffer& buffer,
                                             BlockReads& reads, const RecoverOptions& options,
                                             RecoverProgress& p);
  // Encodes the stripe's data in `buffer` into `parity` and overwrites each good parity block
  // of the buffer that differs, adding it to `found.mismatch`.
  absl::Status VerifyParity(const StripeRef& at, StripeBuffer& buffer, StripeBuffer& parity,
                            bool repair, StripeFindings& found, RecoverProgress& p);
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
  // Online or failing with its namespace open: read from (and, online, written to).
  bool DeviceOnline(uint32_t id);
  bool DeviceDown(uint32_t id);
  // The device's namespace (null if it could not be opened); with `online_only`, null unless
  // the device is online or failing. The handle stays valid for the caller even if the device is
  // reopened.
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
  // Wraps `done` of a write on `device`: counts its failures in a row (a success resets them; a
  // full file system is not counted) and tells the repair listener when they reach
  // StoreOptions::write_errors_to_down. The wrapper runs on the I/O completion thread.
  Namespace::Done TrackWrite(uint32_t device, Namespace::Done done);
  // Opens the namespace of `r` (creating it when `create`) and checks its size and label
  // (Device::label_lba, when it has one). An error says why the device cannot be used.
  // `label` (when not null) gets the label read.
  absl::StatusOr<std::unique_ptr<Namespace>> OpenDevice(const DeviceRecord& r, bool create,
                                                        std::optional<uint64_t> label_lba,
                                                        DeviceLabel* label = nullptr);
  // Init's device pass: opens every device of `records`, refuses to start when too many
  // cannot be used (FailedPrecondition; StoreOptions::start_with_missing_devices), marks those
  // down and those that came back online (not one down for failing writes); reads the stripe
  // census the store keeps from then on. FailedPrecondition also for a device of another LBA size
  // than StoreOptions::lba_size, or device ids that are not 0..N-1.
  absl::Status OpenDevices(std::vector<DeviceRecord>& records, const std::set<uint32_t>& new_ids);
  // Writes a label to every open device that has none yet (a new one, or one from before
  // labels), on an LBA of its own, and records where.
  absl::Status LabelDevices();
  // Writes a label on a newly allocated LBA of `d` (nothing, with a warning, when it is full).
  absl::Status LabelDevice(Device& d);
  absl::Status WriteLabel(uint32_t id, uint64_t lba, const RecordLogPlace& log);

  // Block records (store_records.cc, docs/formats.md "Block records").
  // Refuses (FailedPrecondition, saying what to do) a catalog that is missing, empty or without
  // a store id while devices/ holds namespaces, or an existing one that cannot be opened; else
  // opens it into catalog_.
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
  // region), records the place in its label, and writes its first snapshot. Nothing, OK, for a
  // device without a namespace or label, or (with a warning) without room for a log.
  absl::Status CreateRecordLog(Device& d);
  // After `d`'s namespace was opened again (`device online`): opens its record log at
  // `labelled` (its label's place) and snapshots it, for the operations it missed; creates one
  // when it has none or it cannot be read.
  absl::Status ReopenRecordLog(Device& d, const RecordLogPlace& labelled);
  // A free region of `d` for a new record log; empty when none fits.
  RecordLogPlace AllocateRecordLog(Device& d);
  void CountStripes(uint32_t parity, int64_t delta);
  // Adds to the kept object totals (Totals): `objects` objects of `bytes` bytes in all.
  void CountObjects(int64_t objects, int64_t bytes);
  // The health of `o` as List gives it: measured again if it changed since it was listed;
  // nullopt when it was deleted meanwhile.
  absl::StatusOr<std::optional<ObjectStatus>> ListedHealth(const ObjectRecord& o);
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
  // The SQLite catalog behind a fence: after a commit whose outcome is unknown it takes no more
  // writes, so the store changes nothing more until a restart settles the outcome.
  std::unique_ptr<FencedCatalog> catalog_;

  // Claims on the file systems under the data dir; made by Init before any device opens, shared
  // with every device's namespace (which ends a claim when its write completes).
  std::shared_ptr<FsSpace> space_;

  Mutex state_mu_;  // Serializes SetDeviceState calls.
  Mutex mu_;  // Guards devices_' state, namespaces and allocators (not annotated), and codecs_.
  std::vector<std::unique_ptr<Device>> devices_;
  std::map<std::tuple<int, int, int>, std::shared_ptr<const ec::Codec>> codecs_
      ABSL_GUARDED_BY(mu_);
  std::function<void(uint32_t, const std::string&)> suspect_listener_ ABSL_GUARDED_BY(mu_);
  std::function<void()> repair_listener_ ABSL_GUARDED_BY(mu_);
  int listener_calls_ ABSL_GUARDED_BY(mu_) = 0;
  CondVar listener_idle_;
  std::string store_id_;  // Set by Init.
  mutable Mutex census_mu_;
  std::map<uint32_t, uint64_t> stripes_by_parity_ ABSL_GUARDED_BY(census_mu_);
  ObjectTotals totals_ ABSL_GUARDED_BY(census_mu_);

  std::unique_ptr<ObjectLocks> locks_;
  // Block records: made by Init (OpenRecordLogs).
  std::unique_ptr<RecordKeeper> records_;
  // Logs opened at start-up that must be snapshot (unclean stop, missed operations).
  std::set<uint32_t> stale_logs_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_CORE_H_
