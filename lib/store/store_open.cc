// Store: opening a store (devices, catalog, memory), codecs, and the device handles the flows use.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/records/device_label.h"
#include "lib/store/object_locks.h"
#include "lib/store/object_name.h"
#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::store {

StoreCore::StoreCore(StoreOptions options)
    : options_(std::move(options)),
      engine_(
          std::make_unique<ec::Engine>(ec::EngineOptions{.workers = options_.ec_workers,
                                                         .on_task_done = options_.on_ec_task_done,
                                                         .pin_workers = options_.ec_pin_workers})),
      locks_(std::make_unique<ObjectLocks>()) {}

StoreCore::~StoreCore() {
  {
    MutexLock lock(pinned_mu_);
    pinned_gone_.Wait(pinned_mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pinned_mu_) {
      return pinned_sets_ == 0;
    });
  }
  // A clean stop: every record log says so, with the final committed-through mark.
  if (records_ != nullptr) {
    if (absl::Status s = records_->CloseClean(); !s.ok()) {
      Log(LogLevel::kWarning, "record logs not closed cleanly: %s", s.message());
    }
  }
}

absl::StatusOr<std::unique_ptr<StoreCore>> StoreCore::Open(StoreOptions options) {
  if (options.data_dir.empty()) return absl::InvalidArgumentError("data dir is empty");
  if (options.lba_size < 512 || (options.lba_size & (options.lba_size - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LBA size ", options.lba_size, " is not a power of two >= 512"));
  }
  if (options.device_count < 1 || options.device_count > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("device count ", options.device_count, " must be 1..4096"));
  }
  if (options.device_size < options.lba_size || options.device_size % options.lba_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("device size ", options.device_size,
                                                   " must be a positive multiple of the LBA size ",
                                                   options.lba_size));
  }
  if (options.stripes_in_flight == 1 || options.stripes_in_flight > kMaxStripesInFlight) {
    return absl::InvalidArgumentError(absl::StrCat("stripes in flight ", options.stripes_in_flight,
                                                   " must be 2..", kMaxStripesInFlight,
                                                   " (or 0 for each request's own depth)"));
  }
  if (!options.nvme.dma_map) options.nvme.dma_map = std::make_shared<nvme::DmaMap>();
  if (!options.namespace_factory) options.namespace_factory = NvmeNamespaceFactory(options.nvme);
  std::unique_ptr<StoreCore> store(new StoreCore(std::move(options)));
  if (absl::Status s = store->Init(); !s.ok()) {
    if (IsCatalogDamage(s)) return store->RefuseDamagedCatalog(s);
    return s;
  }
  return store;
}

absl::Status StoreCore::Init() {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(options_.data_dir) / "devices", ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("create data dir ", options_.data_dir, ": ", ec.message()));
  }
  if (absl::Status s = OpenCatalog(); !s.ok()) return s;
  if (options_.on_catalog_commit) catalog_->SetCommitObserver(options_.on_catalog_commit);
  space_ = std::make_shared<FsSpace>(options_.fs_reserve_bytes,
                                     options_.fs_stat ? options_.fs_stat : StatFileSystem);
  if (absl::Status s =
          space_->SetCatalog((std::filesystem::path(options_.data_dir) / "catalog.db").string());
      !s.ok()) {
    return s;
  }
  // The catalog's files (and devices/) may be new: make their directory entries durable.
  if (absl::Status s =
          SyncParentDir((std::filesystem::path(options_.data_dir) / "catalog.db").string());
      !s.ok()) {
    return s;
  }

  absl::StatusOr<std::optional<std::string>> store_id = catalog_->GetMeta("store_id");
  if (!store_id.ok()) return store_id.status();
  if (store_id->has_value()) {
    store_id_ = **store_id;
  } else {
    store_id_ = NewStoreId();
    if (absl::Status s = catalog_->SetMeta("store_id", store_id_); !s.ok()) return s;
  }

  absl::StatusOr<int> dropped = catalog_->DropPendingObjects();
  if (!dropped.ok()) return dropped.status();
  if (*dropped > 0) {
    Log(LogLevel::kWarning, "dropped %d object(s) whose encode did not finish before a stop",
        *dropped);
  }

  absl::StatusOr<std::vector<DeviceRecord>> records = catalog_->ListDevices();
  if (!records.ok()) return records.status();
  std::set<uint32_t> new_ids;
  for (uint32_t id = static_cast<uint32_t>(records->size());
       id < static_cast<uint32_t>(options_.device_count); ++id) {
    DeviceRecord d;
    d.id = id;
    d.path = absl::StrCat("devices/nvme", id, ".ns");
    d.size_bytes = options_.device_size;
    d.lba_size = options_.lba_size;
    if (absl::Status s = catalog_->AddDevice(d); !s.ok()) return s;
    records->push_back(d);
    new_ids.insert(id);
  }
  if (records->size() > static_cast<size_t>(options_.device_count)) {
    Log(LogLevel::kInfo, "catalog has %d devices; using all of them", records->size());
  }

  if (absl::Status s = InitMemory(records->size()); !s.ok()) return s;
  if (absl::Status s = OpenDevices(*records, new_ids); !s.ok()) return s;
  if (absl::Status s = OpenRecordLogs(); !s.ok()) return s;

  if (absl::Status s = MarkUsedSpace(); !s.ok()) return s;
  if (absl::Status s = LabelDevices(); !s.ok()) return s;
  if (absl::Status s = PrepareRecordLogs(); !s.ok()) return s;
  // After the record logs have their regions: every LBA still free is punched.
  ReclaimFreeSpace();
  return absl::OkStatus();
}

// Free space is whatever the catalog does not reference: every block, every label and every
// record log is marked used in its device's allocator.
absl::Status StoreCore::MarkUsedSpace() {
  absl::Status inconsistent;
  absl::Status s = catalog_->ForEachBlock([&](const BlockRecord& b) {
    if (!inconsistent.ok()) return;
    if (b.device >= devices_.size()) {
      inconsistent = absl::FailedPreconditionError(
          absl::StrCat("catalog references unknown device ", b.device));
      return;
    }
    inconsistent = devices_[b.device]->allocator.MarkUsed(b.lba, b.lba_count);
  });
  if (!s.ok()) return s;
  if (!inconsistent.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("catalog is inconsistent: ", inconsistent.message()));
  }
  for (auto& d : devices_) {
    if (!d->label_lba) continue;
    if (absl::Status s = d->allocator.MarkUsed(*d->label_lba, 1); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("catalog is inconsistent: device ", d->record.id, "'s label LBA ",
                       *d->label_lba, " is also a block's: ", s.message()));
    }
  }
  for (auto& d : devices_) {
    if (d->log_place.empty()) continue;
    if (absl::Status s = d->allocator.MarkUsed(d->log_place.first_lba, d->log_place.lba_count);
        !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("catalog is inconsistent: device ", d->record.id, "'s record log (LBAs ",
                       d->log_place.first_lba, "+", d->log_place.lba_count,
                       ") overlaps a block or its label: ", s.message()));
    }
  }
  return absl::OkStatus();
}

// The stripe-memory budget, and the DMA arena, made before any device opens so that each one
// registers the arena with its io_uring as fixed buffers.
absl::Status StoreCore::InitMemory(size_t device_count) {
  // What the devices' DMA pools leave of the memory limit is for stripe buffers.
  MemoryBudgetOptions budget;
  budget.max_waiters = options_.memory_waiters;
  budget.max_wait = options_.memory_wait;
  if (options_.memory_limit > 0) {
    const uint64_t pools = device_count * options_.nvme.host_memory_bytes;
    const uint64_t stride = LbasPerBlock(options_.default_block_size) * options_.lba_size;
    const uint64_t least =
        LeastStripeMemory(options_.default_data_blocks, options_.default_parity_blocks, stride);
    if (options_.memory_limit < pools + least) {
      return absl::InvalidArgumentError(
          absl::StrCat("the memory limit of ", options_.memory_limit,
                       " bytes does not hold the DMA pools of ", device_count, " devices (", pools,
                       " bytes) and what one request on a default stripe needs (", least,
                       " bytes: two stripes and K blocks); raise --memory-limit, or lower "
                       "--nvme-host-memory or --block-size"));
    }
    budget.limit_bytes = options_.memory_limit - pools;
  }
  budget_ = std::make_unique<MemoryBudget>(budget);
  if (const uint64_t arena_pages =
          std::min(budget.limit_bytes, options_.dma_arena_bytes) / nvme::kMinPageSize;
      arena_pages > 0) {
    // The budget, or its first dma_arena_bytes, as one arena.
    absl::StatusOr<std::unique_ptr<nvme::HostMemory>> arena =
        nvme::HostMemory::Create(nvme::kMinPageSize, arena_pages);
    if (arena.ok()) {
      arena_ = *std::move(arena);
      arena_registration_ = nvme::DmaRegistration(
          options_.nvme.dma_map.get(),
          arena_->Translate(arena_->base_address(), arena_->size_bytes()), arena_->size_bytes(),
          /*fixed=*/true);
      if (!arena_registration_.registered()) {
        Log(LogLevel::kWarning,
            "the DMA arena could not be registered for DMA: stripe buffers are copied through "
            "the devices' pools");
      }
    } else {
      Log(LogLevel::kWarning,
          "no DMA arena (%s): stripe buffers are mapped per request and copied through the "
          "devices' pools, which is slower; lower --dma-arena",
          arena.status().message());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const ec::Codec>> StoreCore::CodecFor(ec::MatrixType type, int data,
                                                                     int parity) {
  const auto key = std::make_tuple(static_cast<int>(type), data, parity);
  {
    MutexLock lock(mu_);
    auto it = codecs_.find(key);
    if (it != codecs_.end()) return it->second;
  }
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = ec::Codec::Create(type, data, parity);
  if (!codec.ok()) return codec.status();
  MutexLock lock(mu_);
  codecs_.emplace(key, *codec);
  return *codec;
}

std::shared_ptr<Namespace> StoreCore::NamespaceOf(uint32_t id, bool online_only) {
  MutexLock lock(mu_);
  if (id >= devices_.size()) return nullptr;
  const Device& d = *devices_[id];
  if (online_only && d.record.state != DeviceState::kOnline &&
      d.record.state != DeviceState::kFailing) {
    return nullptr;
  }
  return d.ns;
}

bool StoreCore::DeviceDown(uint32_t id) {
  MutexLock lock(mu_);
  return id < devices_.size() && devices_[id]->record.state == DeviceState::kDown;
}

bool StoreCore::DeviceOnline(uint32_t id) {
  MutexLock lock(mu_);
  if (id >= devices_.size() || devices_[id]->ns == nullptr) return false;
  const DeviceState state = devices_[id]->record.state;
  return state == DeviceState::kOnline || state == DeviceState::kFailing;
}

void StoreCore::MarkSuspect(uint32_t id, const std::string& reason) {
  absl::StatusOr<DeviceStatus> marked = SetDeviceState(id, DeviceState::kFailing, std::nullopt);
  if (!marked.ok()) {  // Already failing or failed: nothing more to do.
    Log(LogLevel::kWarning, "device %d: %s (%s)", id, reason, marked.status().message());
    return;
  }
  Log(LogLevel::kError, "device %d is suspect and now failing: %s", id, reason);
  std::function<void(uint32_t, const std::string&)> listener;
  {
    MutexLock lock(mu_);
    listener = suspect_listener_;
  }
  if (listener) listener(id, reason);
}

void StoreCore::SetSuspectListener(std::function<void(uint32_t, const std::string&)> listener) {
  MutexLock lock(mu_);
  suspect_listener_ = std::move(listener);
}

}  // namespace ecd::store
