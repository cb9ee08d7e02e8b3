// The records the catalog stores and returns: devices, objects, blocks, pages of stripes, and
// its statistics. Shared by the ObjectCatalog interface and its implementations. Plain data (no
// locking); the functions are thread-safe.
#ifndef ECD_LIB_CATALOG_CATALOG_RECORDS_H_
#define ECD_LIB_CATALOG_CATALOG_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lib/ec/matrix.h"

namespace ecd::store {

// kFailing: readable but takes no new blocks while its blocks are moved elsewhere (after a CXL
// report that it needs replacing); it becomes kFailed once empty.
// kDown: lost without an operator asking (it could not be opened, its writes kept failing, its
// namespace is shorter than it was or carries another device's label). Neither read nor written;
// its blocks are rebuilt elsewhere only once it has been down for the repair delay, when it
// becomes kFailed. If it comes back before that, it is online again and nothing was rebuilt.
enum class DeviceState { kOnline, kFailing, kFailed, kDown };

// "online", "failing", "failed" or "down": a string with static storage.
const char* DeviceStateName(DeviceState state);

struct DeviceRecord {
  uint32_t id = 0;
  std::string path;
  uint64_t size_bytes = 0;
  uint32_t lba_size = 0;
  DeviceState state = DeviceState::kOnline;
  // kDown: when it went down (Unix ms, kept across restarts) and why.
  int64_t down_since_unix_ms = 0;
  std::string down_reason;
};

struct ObjectRecord {
  int64_t id = 0;  // Assigned by CreatePendingObject.
  std::string name;
  uint64_t size = 0;
  uint32_t data_blocks = 0;
  uint32_t parity_blocks = 0;
  ec::MatrixType matrix = ec::MatrixType::kCauchy;
  uint64_t block_size = 0;
  uint64_t stripe_count = 0;
  int64_t created_unix_ms = 0;
  // 1 when encoded; each committed Update adds 1 (schema version 2, docs/catalog.md).
  uint64_t version = 1;
};

// How many committed objects there are and how many bytes they hold (their sizes).
struct ObjectTotals {
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

// The counts the store keeps from the moment it opens (ObjectCatalog::Census).
struct ObjectCensus {
  ObjectTotals totals;
  std::map<uint32_t, uint64_t> stripes_by_parity;  // stripes of committed objects by K
};

// Stripes of committed objects short of healthy blocks (ObjectCatalog::CountDamage), and the
// objects that have any.
struct DamageTotals {
  uint64_t degraded_stripes = 0;  // fewer than M+K healthy blocks
  uint64_t lost_stripes = 0;      // fewer than M
  uint64_t degraded_objects = 0;
};

struct BlockRecord {
  uint64_t stripe = 0;
  uint32_t index = 0;  // 0..M-1 data, M..M+K-1 parity.
  uint32_t device = 0;
  uint64_t lba = 0;
  uint32_t lba_count = 0;
  uint32_t crc32c = 0;
  bool corrupt = false;  // Failed its checksum or could not be read; to be rebuilt.
};

// An object with its block rows (a catalog rebuilt from the devices restores them so).
struct ObjectWithBlocks {
  ObjectRecord object;
  std::vector<BlockRecord> blocks;
};

// One stripe of a committed object with all of its block rows, ordered by index.
struct StripeRows {
  ObjectRecord object;
  uint64_t stripe = 0;
  std::vector<BlockRecord> blocks;
};

// Where a page of stripes ends, for the next one: (object, stripe) for corrupt blocks, the LBA
// of the last hit for a device range (-1: from the start).
struct StripeCursor {
  int64_t object = 0;
  uint64_t stripe = 0;
  int64_t lba = -1;
};

// One page of stripes at risk, and where the next page starts.
struct StripePage {
  std::vector<StripeRows> stripes;  // of committed objects only
  bool more = false;                // more stripes may follow after `next`
  StripeCursor next;
};

// LBAs [first_lba, first_lba + lba_count) of one device; lba_count 0: the whole device.
struct DeviceRange {
  uint32_t device = 0;
  uint64_t first_lba = 0;
  uint64_t lba_count = 0;
};

// What the catalog did, for metrics.
struct CatalogStats {
  uint64_t commits = 0;  // write transactions committed
  // Storage failures: I/O errors, a full disk, corruption, a lock timeout, a failed commit.
  // Constraint violations (an object name already taken) are answers, not errors.
  uint64_t errors = 0;
};

// True when `status` came from the catalog finding its storage damaged (for SQLite:
// SQLITE_CORRUPT or SQLITE_NOTADB). Such a status is DataLoss.
bool IsCatalogDamage(const absl::Status& status);

}  // namespace ecd::store

#endif  // ECD_LIB_CATALOG_CATALOG_RECORDS_H_
