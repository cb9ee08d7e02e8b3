// Catalog: the SQLite implementation of ObjectCatalog (object_catalog.h, which states the
// contract): one row per block, in WAL mode with synchronous=FULL. The schema is in
// docs/catalog.md.
//
// A pending object is a row in state "pending"; CommitObject flips it to "committed" in one
// transaction. A unique index on (device, lba) makes shared extents impossible. A COMMIT that
// fails with an I/O error (the WAL's fsync, say) returns CommitOutcomeUnknownError: its frames may
// be in the WAL, and the next open may replay them.
//
// Thread safety: all methods are thread-safe (one connection, serialized by a mutex), but
// SetCommitObserver (set it before the catalog is shared). A walk's `fn` and Backup run with the
// mutex held: every other call waits for them. Ownership: a Catalog owns its connection.
#ifndef ECD_LIB_STORE_CATALOG_H_
#define ECD_LIB_STORE_CATALOG_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lib/catalog/catalog_records.h"
#include "lib/catalog/object_catalog.h"
#include "lib/util/mutex.h"

struct sqlite3;

namespace ecd::store {

class Catalog : public ObjectCatalog {
 public:
  // Opens or creates the catalog database at `path`, migrating its schema to the current one.
  // `read_only`: opens an existing one without writing to it (no schema creation, no migration:
  // FailedPrecondition when it needs one). FailedPrecondition for a schema version newer than
  // this ecd reads; Internal when the file cannot be opened or set up (also a file that is not a
  // database); a query's status (DataLoss for damage) when its schema version cannot be read.
  static absl::StatusOr<std::unique_ptr<Catalog>> Open(const std::string& path,
                                                       bool read_only = false);
  ~Catalog() override;

  // Internal: what statements and transactions count into (sqlite_statement.h).
  struct Counters {
    std::atomic<uint64_t> commits{0};
    std::atomic<uint64_t> errors{0};
    std::function<void(std::chrono::nanoseconds)> on_commit;
  };

  // ObjectCatalog. Writes of one statement (AddDevice, SetMeta, DeleteMeta, CreatePendingObject,
  // DropPendingObjects, SetBlockCorrupt) commit on their own and are not counted as commits.
  absl::StatusOr<std::vector<DeviceRecord>> ListDevices() override;
  absl::Status AddDevice(const DeviceRecord& device) override;
  absl::Status SetDeviceState(uint32_t id, DeviceState state) override;
  absl::Status SetDeviceDown(uint32_t id, int64_t since_unix_ms, absl::string_view reason) override;
  absl::Status PrepareReplacement(uint32_t id) override;

  absl::StatusOr<int64_t> CreatePendingObject(const ObjectRecord& object) override;
  absl::Status AddBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks) override;
  absl::Status CommitObject(int64_t object_id, uint64_t size, uint64_t stripe_count,
                            uint64_t seq = 0) override;
  absl::Status DeleteObject(int64_t object_id, uint64_t seq = 0) override;
  absl::StatusOr<int> DropPendingObjects() override;
  absl::StatusOr<ObjectRecord> GetObject(absl::string_view name) override;
  absl::StatusOr<std::vector<ObjectRecord>> ListObjects() override;
  absl::StatusOr<std::vector<ObjectRecord>> ListObjectsFrom(absl::string_view from, bool after,
                                                            absl::string_view before,
                                                            size_t limit) override;
  absl::StatusOr<DamageTotals> CountDamage(absl::Span<const uint32_t> unhealthy_devices) override;
  absl::Status ForEachEmptyObject(
      const std::function<absl::Status(const ObjectRecord&)>& fn) override;

  absl::Status CommitUpdate(int64_t object_id, uint64_t expected_version,
                            absl::Span<const BlockRecord> replaced,
                            absl::Span<const BlockRecord> added, uint64_t size,
                            uint64_t stripe_count, uint64_t seq = 0) override;

  absl::StatusOr<std::vector<BlockRecord>> GetBlocks(int64_t object_id, uint64_t first_stripe,
                                                     uint64_t stripe_count) override;
  absl::Status ForEachBlock(const std::function<void(const BlockRecord&)>& fn) override;
  absl::Status ForEachBlockOf(int64_t object_id,
                              const std::function<void(const BlockRecord&)>& fn) override;
  absl::Status ForEachBlockOnDevice(
      uint32_t device,
      const std::function<absl::Status(const ObjectRecord&, const BlockRecord&)>& fn) override;
  absl::Status ReplaceBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks,
                             uint64_t seq = 0) override;
  absl::Status SetBlockCorrupt(int64_t object_id, uint64_t stripe, uint32_t index,
                               bool corrupt) override;
  absl::StatusOr<std::vector<std::string>> ObjectsOnDevice(uint32_t device, uint64_t first_lba,
                                                           uint64_t lba_count) override;
  absl::StatusOr<StripePage> StripesWithCorruptBlocks(const StripeCursor& after,
                                                      size_t max_stripes) override;
  absl::StatusOr<StripePage> StripesOnDevice(const DeviceRange& range, const StripeCursor& after,
                                             size_t max_stripes) override;
  absl::StatusOr<ObjectCensus> Census() override;
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> BlockCountsByDevice() override;

  absl::StatusOr<std::optional<std::string>> GetMeta(absl::string_view key) override;
  absl::Status SetMeta(absl::string_view key, absl::string_view value) override;
  absl::Status DeleteMeta(absl::string_view key) override;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MetaWithPrefix(
      absl::string_view prefix) override;

  absl::StatusOr<uint64_t> CommitSeq() override;
  absl::Status AdvanceCommitSeq(uint64_t seq) override;

  // SQLite's PRAGMA integrity_check.
  absl::Status IntegrityCheck() override;
  // SQLite's online backup API.
  absl::Status Backup(const std::string& path) override;
  void SetCommitObserver(std::function<void(std::chrono::nanoseconds)> observer) override {
    counters_.on_commit = std::move(observer);
  }
  CatalogStats stats() const override {
    return {counters_.commits.load(std::memory_order_relaxed),
            counters_.errors.load(std::memory_order_relaxed)};
  }

  // Not part of ObjectCatalog: inserts committed objects with their ids, versions and blocks, in
  // one transaction (a catalog being rebuilt from the devices). AlreadyExists, nothing inserted,
  // when an id, a name or an extent is taken or a block names an unknown device.
  // REQUIRES: the devices were added first.
  absl::Status RestoreObjects(absl::Span<const ObjectWithBlocks> objects);

 private:
  explicit Catalog(sqlite3* db) : db_(db) {}
  absl::Status Exec(const char* sql);
  // The stripes `hits` (SQL giving object_id, stripe and an ordering column `at`, with
  // parameters ?1 and ?2 from `args` and ?3 the limit) names, with all their block rows.
  absl::StatusOr<StripePage> StripesOf(const std::string& hits, std::pair<int64_t, int64_t> args,
                                       size_t max_stripes);

  Mutex mu_;
  sqlite3* const db_;
  Counters counters_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_CATALOG_H_
