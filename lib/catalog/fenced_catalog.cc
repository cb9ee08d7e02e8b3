// FencedCatalog: writes refused after a commit whose outcome is unknown; reads passed through.
#include "lib/catalog/fenced_catalog.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/util/log.h"

namespace ecd::store {
namespace {

const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace

std::optional<std::string> FencedCatalog::fenced_because() const {
  MutexLock lock(mu_);
  return fenced_because_;
}

absl::Status FencedCatalog::CheckOpen() const {
  MutexLock lock(mu_);
  if (!fenced_because_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the catalog takes no more writes: ", *fenced_because_,
      ". Its outcome is settled when the catalog is opened again: fix the catalog's disk, "
      "restart ecd, and check the objects written last (`ecctl stat`)"));
}

void FencedCatalog::Note(absl::string_view what, const absl::Status& status) {
  if (!IsCommitOutcomeUnknown(status)) return;
  MutexLock lock(mu_);
  if (!fenced_because_) {
    fenced_because_ = absl::StrCat("the outcome of ", what, " is unknown (", status.message(), ")");
    Log(LogLevel::kError, "catalog: %s; no more changes are taken until ecd is restarted",
        *fenced_because_);
  }
}

template <typename Write>
auto FencedCatalog::Guard(absl::string_view what, Write write) -> decltype(write()) {
  if (absl::Status s = CheckOpen(); !s.ok()) return s;
  auto result = write();
  Note(what, StatusOf(result));
  return result;
}

absl::Status FencedCatalog::AddDevice(const DeviceRecord& device) {
  return Guard("adding a device", [&] { return inner_->AddDevice(device); });
}

absl::Status FencedCatalog::SetDeviceState(uint32_t id, DeviceState state) {
  return Guard("setting a device state", [&] { return inner_->SetDeviceState(id, state); });
}

absl::Status FencedCatalog::SetDeviceDown(uint32_t id, int64_t since_unix_ms,
                                          absl::string_view reason) {
  return Guard("marking a device down",
               [&] { return inner_->SetDeviceDown(id, since_unix_ms, reason); });
}

absl::Status FencedCatalog::PrepareReplacement(uint32_t id) {
  return Guard("preparing a device replacement", [&] { return inner_->PrepareReplacement(id); });
}

absl::StatusOr<int64_t> FencedCatalog::CreatePendingObject(const ObjectRecord& object) {
  return Guard("creating an object", [&] { return inner_->CreatePendingObject(object); });
}

absl::Status FencedCatalog::AddBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks) {
  return Guard("adding blocks", [&] { return inner_->AddBlocks(object_id, blocks); });
}

absl::Status FencedCatalog::CommitObject(int64_t object_id, uint64_t size, uint64_t stripe_count,
                                         uint64_t seq) {
  return Guard("committing an object",
               [&] { return inner_->CommitObject(object_id, size, stripe_count, seq); });
}

absl::Status FencedCatalog::DeleteObject(int64_t object_id, uint64_t seq) {
  return Guard("deleting an object", [&] { return inner_->DeleteObject(object_id, seq); });
}

absl::StatusOr<int> FencedCatalog::DropPendingObjects() {
  return Guard("dropping pending objects", [&] { return inner_->DropPendingObjects(); });
}

absl::Status FencedCatalog::CommitUpdate(int64_t object_id, uint64_t expected_version,
                                         absl::Span<const BlockRecord> replaced,
                                         absl::Span<const BlockRecord> added, uint64_t size,
                                         uint64_t stripe_count, uint64_t seq) {
  return Guard("committing an update", [&] {
    return inner_->CommitUpdate(object_id, expected_version, replaced, added, size, stripe_count,
                                seq);
  });
}

absl::Status FencedCatalog::ReplaceBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks,
                                          uint64_t seq) {
  return Guard("replacing blocks", [&] { return inner_->ReplaceBlocks(object_id, blocks, seq); });
}

absl::Status FencedCatalog::SetBlockCorrupt(int64_t object_id, uint64_t stripe, uint32_t index,
                                            bool corrupt) {
  return Guard("flagging a block",
               [&] { return inner_->SetBlockCorrupt(object_id, stripe, index, corrupt); });
}

absl::Status FencedCatalog::SetMeta(absl::string_view key, absl::string_view value) {
  return Guard("writing a setting", [&] { return inner_->SetMeta(key, value); });
}

absl::Status FencedCatalog::DeleteMeta(absl::string_view key) {
  return Guard("deleting a setting", [&] { return inner_->DeleteMeta(key); });
}

absl::Status FencedCatalog::AdvanceCommitSeq(uint64_t seq) {
  return Guard("advancing the commit sequence", [&] { return inner_->AdvanceCommitSeq(seq); });
}

absl::StatusOr<std::vector<DeviceRecord>> FencedCatalog::ListDevices() {
  return inner_->ListDevices();
}

absl::StatusOr<ObjectRecord> FencedCatalog::GetObject(absl::string_view name) {
  return inner_->GetObject(name);
}

absl::StatusOr<std::vector<ObjectRecord>> FencedCatalog::ListObjects() {
  return inner_->ListObjects();
}

absl::StatusOr<std::vector<ObjectRecord>> FencedCatalog::ListObjectsFrom(absl::string_view from,
                                                                         bool after,
                                                                         absl::string_view before,
                                                                         size_t limit) {
  return inner_->ListObjectsFrom(from, after, before, limit);
}

absl::StatusOr<DamageTotals> FencedCatalog::CountDamage(
    absl::Span<const uint32_t> unhealthy_devices) {
  return inner_->CountDamage(unhealthy_devices);
}

absl::Status FencedCatalog::ForEachEmptyObject(
    const std::function<absl::Status(const ObjectRecord&)>& fn) {
  return inner_->ForEachEmptyObject(fn);
}

absl::StatusOr<std::vector<BlockRecord>> FencedCatalog::GetBlocks(int64_t object_id,
                                                                  uint64_t first_stripe,
                                                                  uint64_t stripe_count) {
  return inner_->GetBlocks(object_id, first_stripe, stripe_count);
}

absl::Status FencedCatalog::ForEachBlock(const std::function<void(const BlockRecord&)>& fn) {
  return inner_->ForEachBlock(fn);
}

absl::Status FencedCatalog::ForEachBlockOf(int64_t object_id,
                                           const std::function<void(const BlockRecord&)>& fn) {
  return inner_->ForEachBlockOf(object_id, fn);
}

absl::Status FencedCatalog::ForEachBlockOnDevice(
    uint32_t device,
    const std::function<absl::Status(const ObjectRecord&, const BlockRecord&)>& fn) {
  return inner_->ForEachBlockOnDevice(device, fn);
}

absl::StatusOr<std::vector<std::string>> FencedCatalog::ObjectsOnDevice(uint32_t device,
                                                                        uint64_t first_lba,
                                                                        uint64_t lba_count) {
  return inner_->ObjectsOnDevice(device, first_lba, lba_count);
}

absl::StatusOr<StripePage> FencedCatalog::StripesWithCorruptBlocks(const StripeCursor& after,
                                                                   size_t max_stripes) {
  return inner_->StripesWithCorruptBlocks(after, max_stripes);
}

absl::StatusOr<StripePage> FencedCatalog::StripesOnDevice(const DeviceRange& range,
                                                          const StripeCursor& after,
                                                          size_t max_stripes) {
  return inner_->StripesOnDevice(range, after, max_stripes);
}

absl::StatusOr<ObjectCensus> FencedCatalog::Census() { return inner_->Census(); }

absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> FencedCatalog::BlockCountsByDevice() {
  return inner_->BlockCountsByDevice();
}

absl::StatusOr<std::optional<std::string>> FencedCatalog::GetMeta(absl::string_view key) {
  return inner_->GetMeta(key);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> FencedCatalog::MetaWithPrefix(
    absl::string_view prefix) {
  return inner_->MetaWithPrefix(prefix);
}

absl::StatusOr<uint64_t> FencedCatalog::CommitSeq() { return inner_->CommitSeq(); }

absl::Status FencedCatalog::IntegrityCheck() { return inner_->IntegrityCheck(); }

absl::Status FencedCatalog::Backup(const std::string& path) { return inner_->Backup(path); }

void FencedCatalog::SetCommitObserver(std::function<void(std::chrono::nanoseconds)> observer) {
  inner_->SetCommitObserver(std::move(observer));
}

CatalogStats FencedCatalog::stats() const { return inner_->stats(); }

}  // namespace ecd::store
