// Store and StoreAdmin: the facades over StoreCore. Each method passes its call on unchanged.
#include "lib/store/store.h"

#include <utility>

#include "lib/store/store_admin.h"
#include "lib/store/store_core.h"

namespace ecd::store {

absl::StatusOr<std::unique_ptr<Store>> Store::Open(StoreOptions options) {
  absl::StatusOr<std::unique_ptr<StoreCore>> core = StoreCore::Open(std::move(options));
  if (!core.ok()) return core.status();
  return std::unique_ptr<Store>(new Store(std::move(*core)));
}

Store::Store(std::unique_ptr<StoreCore> core)
    : core_(std::move(core)), admin_(std::make_unique<StoreAdmin>(*core_)) {}

Store::~Store() = default;

absl::StatusOr<ObjectRecord> Store::Encode(const EncodeParams& params, ByteSource& source,
                                           const Interrupt& interrupt) {
  return core_->Encode(params, source, interrupt);
}

absl::StatusOr<UpdateResult> Store::Update(absl::string_view name, uint64_t offset,
                                           ByteSource& data, bool append,
                                           const Interrupt& interrupt) {
  return core_->Update(name, offset, data, append, interrupt);
}

absl::Status Store::Read(absl::string_view name, uint64_t offset, uint64_t length, ByteSink& sink,
                         const Interrupt& interrupt) {
  return core_->Read(name, offset, length, sink, interrupt);
}

absl::Status Store::GetBlock(absl::string_view name, uint64_t stripe, uint32_t index,
                             ByteSink& sink, const Interrupt& interrupt) {
  return core_->GetBlock(name, stripe, index, sink, interrupt);
}

absl::StatusOr<ObjectStatus> Store::Stat(absl::string_view name, bool with_blocks, bool verify,
                                         const Interrupt& interrupt) {
  return core_->Stat(name, with_blocks, verify, interrupt);
}

absl::StatusOr<ObjectListing> Store::List(const ListQuery& query, bool with_health) {
  return core_->List(query, with_health);
}

ObjectTotals Store::Totals() const { return core_->Totals(); }

absl::StatusOr<DamageTotals> Store::Damage() { return core_->Damage(); }

absl::StatusOr<uint64_t> Store::Delete(absl::string_view name, const Interrupt& interrupt) {
  return core_->Delete(name, interrupt);
}

absl::StatusOr<RecoverProgress> Store::Recover(
    absl::string_view name, const std::function<void(const RecoverProgress&)>& progress,
    const RecoverOptions& options) {
  return core_->Recover(name, progress, options);
}

StoreStats Store::Stats() const { return core_->Stats(); }

absl::StatusOr<std::vector<DeviceStatus>> StoreAdmin::ListDevices() { return core_.ListDevices(); }

std::vector<DeviceRecord> StoreAdmin::DeviceRecords() { return core_.DeviceRecords(); }

absl::StatusOr<DeviceStatus> StoreAdmin::SetDeviceState(uint32_t id, DeviceState state,
                                                        std::optional<DeviceState> only_from) {
  return core_.SetDeviceState(id, state, only_from);
}

absl::StatusOr<DeviceStatus> StoreAdmin::MarkDeviceDown(uint32_t id, const std::string& reason) {
  return core_.MarkDeviceDown(id, reason);
}

absl::StatusOr<DeviceStatus> StoreAdmin::ReplaceDevice(uint32_t id) {
  return core_.ReplaceDevice(id);
}

std::vector<uint32_t> StoreAdmin::DownDevicesWithFailingWrites() {
  return core_.DownDevicesWithFailingWrites();
}

void StoreAdmin::SetRepairListener(std::function<void()> fn) {
  core_.SetRepairListener(std::move(fn));
}

void StoreAdmin::SetSuspectListener(
    std::function<void(uint32_t device, const std::string& reason)> fn) {
  core_.SetSuspectListener(std::move(fn));
}

absl::StatusOr<std::vector<std::string>> StoreAdmin::ObjectsOnDevice(uint32_t device,
                                                                     uint64_t first_lba,
                                                                     uint64_t lba_count) {
  return core_.catalog().ObjectsOnDevice(device, first_lba, lba_count);
}

absl::StatusOr<StripePage> StoreAdmin::StripesWithCorruptBlocks(const StripeCursor& after,
                                                                size_t max) {
  return core_.catalog().StripesWithCorruptBlocks(after, max);
}

absl::StatusOr<StripePage> StoreAdmin::StripesOnDevice(const DeviceRange& range,
                                                       const StripeCursor& after, size_t max) {
  return core_.catalog().StripesOnDevice(range, after, max);
}

absl::StatusOr<std::optional<std::string>> StoreAdmin::GetMeta(absl::string_view key) {
  return core_.catalog().GetMeta(key);
}

absl::Status StoreAdmin::SetMeta(absl::string_view key, absl::string_view value) {
  return core_.catalog().SetMeta(key, value);
}

absl::Status StoreAdmin::DeleteMeta(absl::string_view key) {
  return core_.catalog().DeleteMeta(key);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> StoreAdmin::MetaWithPrefix(
    absl::string_view prefix) {
  return core_.catalog().MetaWithPrefix(prefix);
}

absl::Status StoreAdmin::BackupCatalog(const std::string& path) {
  return core_.catalog().Backup(path);
}

uint64_t StoreAdmin::RequestsWaitingForMemory() const { return core_.RequestsWaitingForMemory(); }

const std::string& StoreAdmin::store_id() const { return core_.store_id(); }

uint32_t StoreAdmin::lba_size() const { return core_.lba_size(); }

}  // namespace ecd::store
