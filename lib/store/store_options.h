// StoreOptions: how a Store is opened (its data directory, devices, default stripe shape, memory,
// flushing and fault seams). Plain data; Store::Open checks it and keeps its own copy.
//
// Store::Open returns InvalidArgument for an empty data_dir, an lba_size that is not a power of
// two >= 512, a device_count outside 1..4096, a device_size that is not a positive multiple of
// lba_size, a stripes_in_flight of 1 or above kMaxStripesInFlight, or a memory_limit that does
// not hold the devices' DMA pools and one request on a default stripe.
#ifndef ECD_LIB_STORE_STORE_OPTIONS_H_
#define ECD_LIB_STORE_STORE_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "lib/devices/fs_space.h"
#include "lib/devices/namespace.h"
#include "lib/ec/engine.h"
#include "lib/nvme/device.h"
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
  // per request, at (M+K) x block size of memory per stripe. With a memory limit, a depth set
  // here, and a recover's own, is cut to what fits a quarter of it (at least 2 stripes), so that
  // one request cannot hold the budget while the others wait; every depth is cut to what fits
  // the whole limit; a read never takes more stripes than it reads. A request may so get a
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
  // so a larger arena makes the start slower.
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

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_OPTIONS_H_
