// FencedCatalog: an ObjectCatalog that stops writing after a commit whose outcome is unknown.
// Past that point the open catalog's view may differ from what the storage holds (a commit that
// failed here may replay at the next open), so every later write is refused until the catalog
// is opened again; reads pass through. A write already past the check when the fence goes up is
// not stopped.
//
// Thread safety: as the wrapped catalog's (thread-safe). Ownership: owns the wrapped catalog.
#ifndef ECD_LIB_CATALOG_FENCED_CATALOG_H_
#define ECD_LIB_CATALOG_FENCED_CATALOG_H_

#include <memory>
#include <optional>
#include <string>

#include "lib/catalog/object_catalog.h"
#include "lib/util/mutex.h"

namespace ecd::store {

class FencedCatalog final : public ObjectCatalog {
 public:
  // REQUIRES: inner is not null.
  explicit FencedCatalog(std::unique_ptr<ObjectCatalog> inner) : inner_(std::move(inner)) {}

  // Why writes are refused: the first write whose outcome was unknown, and its status; nullopt
  // while writes are allowed.
  std::optional<std::string> fenced_because() const;

  // Writes: refused with FailedPrecondition (saying to restart ecd) once fenced; a write that
  // returns an outcome-unknown status fences the catalog and returns that status.
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
  absl::Status CommitUpdate(int64_t object_id, uint64_t expected_version,
                            absl::Span<const BlockRecord> replaced,
                            absl::Span<const BlockRecord> added, uint64_t size,
                            uint64_t stripe_count, uint64_t seq = 0) override;
  absl::Status ReplaceBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks,
                             uint64_t seq = 0) override;
  absl::Status SetBlockCorrupt(int64_t object_id, uint64_t stripe, uint32_t index,
                               bool corrupt) override;
  absl::Status SetMeta(absl::string_view key, absl::string_view value) override;
  absl::Status DeleteMeta(absl::string_view key) override;
  absl::Status AdvanceCommitSeq(uint64_t seq) override;

  // Reads and upkeep: passed through.
  absl::StatusOr<std::vector<DeviceRecord>> ListDevices() override;
  absl::StatusOr<ObjectRecord> GetObject(absl::string_view name) override;
  absl::StatusOr<std::vector<ObjectRecord>> ListObjects() override;
  absl::StatusOr<std::vector<ObjectRecord>> ListObjectsFrom(absl::string_view from, bool after,
                                                            absl::string_view before,
                                                            size_t limit) override;
  absl::StatusOr<DamageTotals> CountDamage(absl::Span<const uint32_t> unhealthy_devices) override;
  absl::Status ForEachEmptyObject(
      const std::function<absl::Status(const ObjectRecord&)>& fn) override;
  absl::StatusOr<std::vector<BlockRecord>> GetBlocks(int64_t object_id, uint64_t first_stripe,
                                                     uint64_t stripe_count) override;
  absl::Status ForEachBlock(const std::function<void(const BlockRecord&)>& fn) override;
  absl::Status ForEachBlockOf(int64_t object_id,
                              const std::function<void(const BlockRecord&)>& fn) override;
  absl::Status ForEachBlockOnDevice(
      uint32_t device,
      const std::function<absl::Status(const ObjectRecord&, const BlockRecord&)>& fn) override;
  absl::StatusOr<std::vector<std::string>> ObjectsOnDevice(uint32_t device, uint64_t first_lba,
                                                           uint64_t lba_count) override;
  absl::StatusOr<StripePage> StripesWithCorruptBlocks(const StripeCursor& after,
                                                      size_t max_stripes) override;
  absl::StatusOr<StripePage> StripesOnDevice(const DeviceRange& range, const StripeCursor& after,
                                             size_t max_stripes) override;
  absl::StatusOr<ObjectCensus> Census() override;
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> BlockCountsByDevice() override;
  absl::StatusOr<std::optional<std::string>> GetMeta(absl::string_view key) override;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MetaWithPrefix(
      absl::string_view prefix) override;
  absl::StatusOr<uint64_t> CommitSeq() override;
  absl::Status IntegrityCheck() override;
  absl::Status Backup(const std::string& path) override;
  void SetCommitObserver(std::function<void(std::chrono::nanoseconds)> observer) override;
  CatalogStats stats() const override;

 private:
  // FailedPrecondition once fenced, else OK.
  absl::Status CheckOpen() const;
  // Fences the catalog when `status` is outcome-unknown (the first such write is kept).
  void Note(absl::string_view what, const absl::Status& status);
  // Runs `write` unless fenced, noting its outcome.
  template <typename Write>
  auto Guard(absl::string_view what, Write write) -> decltype(write());

  const std::unique_ptr<ObjectCatalog> inner_;
  mutable Mutex mu_;
  std::optional<std::string> fenced_because_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::store

#endif  // ECD_LIB_CATALOG_FENCED_CATALOG_H_
