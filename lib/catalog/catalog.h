// Catalog: the durable record of devices, objects and where every block of every stripe lives,
// kept in SQLite in WAL mode with synchronous=FULL. The schema is in docs/catalog.md.
//
// An object is created "pending", its blocks are added in batches as their stripes are written,
// and it becomes visible only when CommitObject flips it to "committed", after its data is
// durable. Pending objects left by a crash are dropped at start-up (DropPendingObjects), so their
// extents are free again. A unique index on (device, lba) makes shared extents impossible.
//
// Thread safety: all methods are thread-safe (one connection, serialized by a mutex).
#ifndef ECD_LIB_STORE_CATALOG_H_
#define ECD_LIB_STORE_CATALOG_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lib/ec/matrix.h"

struct sqlite3;

namespace ecd::store {

// kFailing: readable but takes no new blocks while its blocks are moved elsewhere (after a CXL
// report that it needs replacing); it becomes kFailed once empty.
// kDown: lost without an operator asking (it could not be opened, its writes kept failing, its
// namespace is shorter than it was or carries another device's label). Neither read nor written;
// its blocks are rebuilt elsewhere only once it has been down for the repair delay, when it
// becomes kFailed. If it comes back before that, it is online again and nothing was rebuilt.
enum class DeviceState { kOnline, kFailing, kFailed, kDown };

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
  // SQLite failures: I/O errors, a full disk, corruption, a lock timeout, a failed commit.
  // Constraint violations (an object name already taken) are answers, not errors.
  uint64_t errors = 0;
};

// True when `status` came from SQLite finding the catalog file damaged (SQLITE_CORRUPT or
// SQLITE_NOTADB). Such a status is DataLoss.
bool IsCatalogDamage(const absl::Status& status);

class Catalog {
 public:
  // Opens or creates the catalog database at `path`. `read_only`: opens an existing one without
  // writing to it (no schema creation, no migration: FailedPrecondition when it needs one).
  static absl::StatusOr<std::unique_ptr<Catalog>> Open(const std::string& path,
                                                       bool read_only = false);
  ~Catalog();
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  // Called after each committed write transaction with the time COMMIT took (the WAL append
  // and its fsync), on the committing thread. REQUIRES: set before the catalog is shared.
  void SetCommitObserver(std::function<void(std::chrono::nanoseconds)> observer) {
    counters_.on_commit = std::move(observer);
  }
  CatalogStats stats() const {
    return {counters_.commits.load(std::memory_order_relaxed),
            counters_.errors.load(std::memory_order_relaxed)};
  }

  // Internal: what statements and transactions count into (sqlite_statement.h).
  struct Counters {
    std::atomic<uint64_t> commits{0};
    std::atomic<uint64_t> errors{0};
    std::function<void(std::chrono::nanoseconds)> on_commit;
  };

  absl::StatusOr<std::vector<DeviceRecord>> ListDevices();
  absl::Status AddDevice(const DeviceRecord& device);
  // Sets kOnline, kFailing or kFailed (clearing a down mark). For kDown use SetDeviceDown.
  absl::Status SetDeviceState(uint32_t id, DeviceState state);
  // Marks a device down since `since_unix_ms` for `reason`, in one transaction.
  absl::Status SetDeviceDown(uint32_t id, int64_t since_unix_ms, absl::string_view reason);
  // Before a device's namespace is replaced by a blank one: every block recorded on it is
  // marked corrupt and its label's place (meta `device_label/<id>`) forgotten, in one
  // transaction. Its state is left as it is.
  absl::Status PrepareReplacement(uint32_t id);

  // Inserts a pending object and returns its id. AlreadyExists if the name is taken (by a
  // committed object or by an encode in progress).
  absl::StatusOr<int64_t> CreatePendingObject(const ObjectRecord& object);
  // Adds blocks of a pending object, in one transaction.
  absl::Status AddBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks);
  // Each commit below takes the sequence number of the operation whose block records it makes
  // live (docs/formats.md, "The commit point") and raises meta commit_seq to it in the same
  // transaction; 0: an operation without records.

  // Sets the final size and stripe count and makes the object visible, in one transaction.
  absl::Status CommitObject(int64_t object_id, uint64_t size, uint64_t stripe_count,
                            uint64_t seq = 0);
  // Removes an object (pending or committed) and all its blocks, in one transaction.
  absl::Status DeleteObject(int64_t object_id, uint64_t seq = 0);
  // meta commit_seq: the highest sequence number committed or voided (0 for none).
  absl::StatusOr<uint64_t> CommitSeq();
  // Raises meta commit_seq to `seq` (an operation that voided its records).
  absl::Status AdvanceCommitSeq(uint64_t seq);
  // Calls `fn` for every block on `device` of a committed object, ordered by object, stripe
  // and index, holding the catalog for the whole walk; stops at the first error `fn` returns.
  absl::Status ForEachBlockOnDevice(
      uint32_t device,
      const std::function<absl::Status(const ObjectRecord&, const BlockRecord&)>& fn);
  // Calls `fn` for every committed object without blocks (an empty one), by id.
  absl::Status ForEachEmptyObject(const std::function<absl::Status(const ObjectRecord&)>& fn);
  // SQLite's PRAGMA integrity_check; DataLoss naming the first problems.
  absl::Status IntegrityCheck();
  // Copies the whole catalog, consistent as of one moment, to a new database at `path`
  // (SQLite's online backup API). REQUIRES: nothing else uses `path`.
  absl::Status Backup(const std::string& path);
  // Inserts committed objects with their ids and blocks, in one transaction (a catalog being
  // rebuilt from the devices).
  absl::Status RestoreObjects(absl::Span<const ObjectWithBlocks> objects);
  // Removes every pending object; returns how many there were.
  absl::StatusOr<int> DropPendingObjects();

  // The committed object called `name`, or NotFound.
  absl::StatusOr<ObjectRecord> GetObject(absl::string_view name);
  absl::StatusOr<std::vector<ObjectRecord>> ListObjects();

  // Blocks of stripes [first_stripe, first_stripe + stripe_count), ordered by stripe and index.
  absl::StatusOr<std::vector<BlockRecord>> GetBlocks(int64_t object_id, uint64_t first_stripe,
                                                     uint64_t stripe_count);
  // Calls `fn` for every block of every object (pending included), in no particular order.
  absl::Status ForEachBlock(const std::function<void(const BlockRecord&)>& fn);
  // Calls `fn` for every block of one object.
  absl::Status ForEachBlockOf(int64_t object_id, const std::function<void(const BlockRecord&)>& fn);
  // Names of committed objects with a block on `device` whose extent overlaps
  // [first_lba, first_lba + lba_count); lba_count 0 means the whole device. Sorted by name.
  absl::StatusOr<std::vector<std::string>> ObjectsOnDevice(uint32_t device, uint64_t first_lba,
                                                           uint64_t lba_count);
  // Pages through the stripes the repair must look at, each with all its block rows: those
  // with a corrupt block, in (object, stripe) order, or those with a block overlapping `range`,
  // in LBA order. At most `max_stripes` stripes after `after`. REQUIRES: max_stripes > 0.
  absl::StatusOr<StripePage> StripesWithCorruptBlocks(const StripeCursor& after,
                                                      size_t max_stripes);
  absl::StatusOr<StripePage> StripesOnDevice(const DeviceRange& range, const StripeCursor& after,
                                             size_t max_stripes);
  // Stripes of committed objects by their parity block count K.
  absl::StatusOr<std::map<uint32_t, uint64_t>> StripesByParity();
  // Number of blocks stored on each device id.
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> BlockCountsByDevice();

  // Points existing blocks (matched by stripe and index) at new extents with new checksums and
  // clears their corrupt flag, all in one transaction.
  absl::Status ReplaceBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks,
                             uint64_t seq = 0);
  // Commits an update of a committed object in one transaction: points `replaced` blocks
  // (matched by stripe and index) at their new extents and checksums, clearing their corrupt
  // flag; inserts the `added` blocks (new stripes of an append); sets the object's size and
  // stripe count; and bumps its version. Aborted, with nothing changed, unless the object is
  // at `expected_version`.
  absl::Status CommitUpdate(int64_t object_id, uint64_t expected_version,
                            absl::Span<const BlockRecord> replaced,
                            absl::Span<const BlockRecord> added, uint64_t size,
                            uint64_t stripe_count, uint64_t seq = 0);
  // A value of the meta table (docs/catalog.md lists the keys); nullopt when unset.
  absl::StatusOr<std::optional<std::string>> GetMeta(absl::string_view key);
  absl::Status SetMeta(absl::string_view key, absl::string_view value);
  absl::Status DeleteMeta(absl::string_view key);
  // Every key starting with `prefix`, with its value, in key order.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MetaWithPrefix(
      absl::string_view prefix);

  // Sets or clears the corrupt flag of one block.
  absl::Status SetBlockCorrupt(int64_t object_id, uint64_t stripe, uint32_t index, bool corrupt);

 private:
  explicit Catalog(sqlite3* db) : db_(db) {}
  absl::Status Exec(const char* sql);
  // The stripes `hits` (SQL giving object_id, stripe and an ordering column `at`, with
  // parameters ?1 and ?2 from `args` and ?3 the limit) names, with all their block rows.
  absl::StatusOr<StripePage> StripesOf(const std::string& hits, std::pair<int64_t, int64_t> args,
                                       size_t max_stripes);

  std::mutex mu_;
  sqlite3* const db_;
  Counters counters_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_CATALOG_H_
