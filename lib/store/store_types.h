// The values the Store takes and returns: encode parameters, update results, object and device
// health, recover options and progress, and the store's statistics. Plain data: no locking, no
// references (a RecoverOptions' callbacks are borrowed for the Recover call they are passed to).
#ifndef ECD_LIB_STORE_STORE_TYPES_H_
#define ECD_LIB_STORE_STORE_TYPES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/catalog/catalog.h"
#include "lib/devices/fs_space.h"
#include "lib/ec/matrix.h"

namespace ecd::store {

struct EncodeParams {
  std::string name;
  uint32_t data_blocks = 0;    // 0: the default.
  uint32_t parity_blocks = 0;  // 0: the default.
  ec::MatrixType matrix = ec::MatrixType::kCauchy;
  uint64_t block_size = 0;  // 0: the default.
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

// One page of a listing (Store::List): ListPage's entries, each object with its health.
struct ObjectListing {
  std::vector<ObjectStatus> objects;
  std::vector<std::string> common_prefixes;
  std::string next_page_token;  // "": the last page
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
  // device or a media range a device reported bad. Called on Recover's thread with the object's
  // exclusive lock held (no other store lock): it must not make requests on that object.
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

// What the store holds and did, for metrics and status: one consistent-enough snapshot per call
// (each part is read under its own lock).
struct StoreStats {
  // The stripe buffers' budget (StoreOptions::memory_limit; MemoryBudget).
  struct Memory {
    uint64_t limit_bytes = 0;  // 0: no limit
    uint64_t reserved_bytes = 0;
    uint64_t waiting = 0;   // requests waiting for memory now
    uint64_t waits = 0;     // requests that had to wait, since the store opened
    uint64_t refusals = 0;  // requests refused memory, since the store opened
  };
  // The DMA arena (StoreOptions::dma_arena_bytes): its size and free bytes (0 and 0 without
  // one), and the stripe buffers that found no run of it long enough and were mapped on their
  // own.
  struct Arena {
    uint64_t bytes = 0;
    uint64_t free_bytes = 0;
    uint64_t fallbacks = 0;
  };
  // Stripe-buffer sets of reads: `in_reads`, one per read in progress that holds its stripe
  // buffers (not one still waiting for memory, nor GetBlock), and `after_reads`, one per read
  // that returned while its sink still pins its buffers (ByteSink::WritePinned). Their memory
  // stays reserved until the last pin goes.
  struct ReadBuffers {
    int in_reads = 0;
    int after_reads = 0;
  };
  Memory memory;
  Arena arena;
  ReadBuffers read_buffers;
  CatalogStats catalog;
  // Set once a catalog commit's outcome was unknown (a failed fsync of its WAL): why. From then
  // on the store refuses every change until it is restarted (FencedCatalog).
  std::optional<std::string> catalog_fenced;
  // The file systems holding the catalog and the namespace files: their size, free bytes, the
  // reserve and the bytes promised to writes in progress (0 bytes for one that cannot be
  // stat'ed).
  std::vector<FileSystemUsage> file_systems;
  // Stripes of committed objects by parity count K, kept as objects come and go (no scan).
  std::map<uint32_t, uint64_t> stripes_by_parity;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_TYPES_H_
