// Store: the health of its devices. Opening them at start-up with their labels checked, the
// guard against starting with too many missing, down and replaced devices, and devices whose
// writes keep failing.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "lib/records/device_label.h"
#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::store {
namespace {

std::string LabelKey(uint32_t id) { return absl::StrCat("device_label/", id); }

// The reason of a device down for its writes; such a device is not brought back by a restart.
constexpr char kWritesFailed[] = "writes in a row failed";

// A device that cannot be used at start-up, and why.
struct Unusable {
  uint32_t id;
  std::string path;
  std::string why;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Namespace>> StoreCore::OpenDevice(const DeviceRecord& r, bool create,
                                                                 std::optional<uint64_t> label_lba,
                                                                 DeviceLabel* label_out) {
  const std::string path = DevicePath(options_.data_dir, r.path);
  absl::StatusOr<std::unique_ptr<Namespace>> made =
      options_.namespace_factory(path, r.size_bytes, r.lba_size, create);
  if (!made.ok()) return made.status();
  // Its file system, for the space claims of its new extents; each write's completion ends them.
  space_->SetDevice(r.id, path);
  std::unique_ptr<Namespace> ns = ReleaseClaimsOnWrite(*std::move(made), space_, r.id);
  if (ns->lba_count() * r.lba_size < r.size_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "its namespace holds ", ns->lba_count() * r.lba_size, " bytes, fewer than the ",
        r.size_bytes, " it was created with: it was cut short or replaced"));
  }
  if (!label_lba) return ns;
  std::vector<uint8_t> lba(r.lba_size);
  if (absl::Status s = ns->Read(*label_lba, absl::MakeSpan(lba)); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("its label (LBA ", *label_lba, ") cannot be read: ", s.message()));
  }
  absl::StatusOr<DeviceLabel> label = DecodeDeviceLabel(lba);
  if (!label.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        label.status().message(), absl::IsNotFound(label.status())
                                      ? "; the namespace was replaced or wiped (`ecctl device "
                                        "replace` takes a blank namespace into the slot)"
                                      : ""));
  }
  if (label->store_id != store_id_) {
    return absl::FailedPreconditionError(
        absl::StrCat("its label says it belongs to store ", label->store_id, ", not this one (",
                     store_id_, "): a namespace of another data dir is at this path"));
  }
  if (label->device != r.id) {
    return absl::FailedPreconditionError(absl::StrCat("its label says it is device ", label->device,
                                                      ": namespaces were swapped; put each "
                                                      "back at its own path"));
  }
  if (label->size_bytes != r.size_bytes || label->lba_size != r.lba_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("its label says ", label->size_bytes, " bytes of ", label->lba_size,
                     "-byte LBAs, the catalog ", r.size_bytes, " of ", r.lba_size));
  }
  if (label_out != nullptr) *label_out = *label;
  return ns;
}

absl::Status StoreCore::OpenDevices(std::vector<DeviceRecord>& records,
                                    const std::set<uint32_t>& new_ids) {
  std::vector<std::unique_ptr<Namespace>> opened(records.size());
  std::vector<std::optional<uint64_t>> label_lbas(records.size());
  std::vector<DeviceLabel> labels(records.size());
  std::vector<Unusable> unusable;
  for (DeviceRecord& r : records) {
    if (r.lba_size != options_.lba_size) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device ", r.id, " was created with ", r.lba_size, "-byte LBAs but --lba-size is ",
          options_.lba_size, "; start ecd with --lba-size ", r.lba_size, " for this data dir"));
    }
    const size_t at = static_cast<size_t>(&r - records.data());
    if (r.id != at) {
      return absl::FailedPreconditionError(
          absl::StrCat("catalog device ids are not dense (found ", r.id, " at position ", at, ")"));
    }
    absl::StatusOr<std::optional<std::string>> lba = catalog_->GetMeta(LabelKey(r.id));
    if (!lba.ok()) return lba.status();
    uint64_t value = 0;
    if (lba->has_value() && absl::SimpleAtoi(**lba, &value)) label_lbas[at] = value;
    absl::StatusOr<std::unique_ptr<Namespace>> ns =
        OpenDevice(r, new_ids.count(r.id) > 0, label_lbas[at], &labels[at]);
    if (ns.ok()) {
      opened[at] = std::move(*ns);
    } else if (r.state != DeviceState::kFailed) {
      unusable.push_back(
          {r.id, DevicePath(options_.data_dir, r.path), std::string(ns.status().message())});
    }
  }
  // Guard: more unusable devices than the fewest parity blocks of any object is likelier a
  // missing mount or a wrong path than that many dead disks. Change nothing and say so.
  absl::StatusOr<ObjectCensus> census = catalog_->Census();
  if (!census.ok()) return census.status();
  {
    MutexLock lock(census_mu_);
    stripes_by_parity_ = census->stripes_by_parity;  // the census the store keeps from here on
    totals_ = census->totals;
  }
  if (!unusable.empty() && !census->stripes_by_parity.empty() &&
      unusable.size() > census->stripes_by_parity.begin()->first &&
      !options_.start_with_missing_devices) {
    std::vector<std::string> each;
    each.reserve(unusable.size());
    for (const Unusable& u : unusable) {
      each.push_back(absl::StrCat("device ", u.id, " (", u.path, "): ", u.why));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        unusable.size(), " devices cannot be used, more than the ",
        census->stripes_by_parity.begin()->first,
        " parity blocks of the least protected object: ", absl::StrJoin(each, "; "),
        ". Nothing was marked down or failed. Check mounts and paths and start again; if the "
        "devices are really gone, start with --start-with-missing-devices"));
  }
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (const Unusable& u : unusable) {
    DeviceRecord& r = records[u.id];
    Log(LogLevel::kError,
        "device %d (%s) cannot be used: %s; it is down. Its blocks are served from the other "
        "devices and rebuilt elsewhere after the repair delay unless it comes back",
        u.id, u.path, u.why);
    if (r.state == DeviceState::kDown) continue;  // Keeps the time it first went down.
    if (absl::Status s = catalog_->SetDeviceDown(u.id, now_ms, u.why); !s.ok()) return s;
    r.state = DeviceState::kDown;
    r.down_since_unix_ms = now_ms;
    r.down_reason = u.why;
  }
  for (DeviceRecord& r : records) {
    const size_t at = r.id;
    // A device down because its writes kept failing stays down: that it opens proves nothing.
    if (opened[at] != nullptr && r.state == DeviceState::kDown &&
        !absl::StrContains(r.down_reason, kWritesFailed)) {
      Log(LogLevel::kInfo, "device %d is back; it is online again and nothing was rebuilt", r.id);
      if (absl::Status s = catalog_->SetDeviceState(r.id, DeviceState::kOnline); !s.ok()) return s;
      r.state = DeviceState::kOnline;
      r.down_since_unix_ms = 0;
      r.down_reason.clear();
    }
    devices_.push_back(std::make_unique<Device>(r, std::move(opened[at])));
    devices_.back()->label_lba = label_lbas[at];
    devices_.back()->log_place = labels[at].log;
  }
  return absl::OkStatus();
}

absl::Status StoreCore::WriteLabel(uint32_t id, uint64_t lba, const RecordLogPlace& log) {
  std::shared_ptr<Namespace> ns;
  DeviceRecord r;
  {
    MutexLock lock(mu_);
    ns = devices_[id]->ns;
    r = devices_[id]->record;
  }
  std::vector<uint8_t> bytes(r.lba_size, 0);
  const std::vector<uint8_t> label =
      EncodeDeviceLabel({.store_id = store_id_,
                         .device = id,
                         .size_bytes = r.size_bytes,
                         .lba_size = r.lba_size,
                         .created_unix_ms = absl::ToUnixMillis(absl::Now()),
                         .log = log});
  std::copy(label.begin(), label.end(), bytes.begin());
  if (absl::Status s = ns->Write(lba, bytes); !s.ok()) return s;
  if (absl::Status s = ns->Flush(); !s.ok()) return s;
  return catalog_->SetMeta(LabelKey(id), absl::StrCat(lba));
}

absl::Status StoreCore::LabelDevices() {
  for (auto& d : devices_) {
    {
      MutexLock lock(mu_);
      if (d->label_lba || d->ns == nullptr || d->record.state == DeviceState::kFailed) continue;
    }
    if (absl::Status s = LabelDevice(*d); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status StoreCore::LabelDevice(Device& d) {
  std::optional<uint64_t> lba;
  {
    MutexLock lock(mu_);
    lba = d.allocator.Allocate(1);
  }
  if (!lba) {
    Log(LogLevel::kWarning, "device %d has no free LBA for its label; it is not labelled",
        d.record.id);
    return absl::OkStatus();
  }
  if (absl::Status s = WriteLabel(d.record.id, *lba, RecordLogPlace{}); !s.ok()) {
    BlockRecord label;
    label.device = d.record.id;
    label.lba = *lba;
    label.lba_count = 1;
    FreeExtents({label});
    return absl::Status(
        s.code(), absl::StrCat("writing the label of device ", d.record.id, ": ", s.message()));
  }
  MutexLock lock(mu_);
  d.label_lba = lba;
  return absl::OkStatus();
}

absl::StatusOr<DeviceStatus> StoreCore::MarkDeviceDown(uint32_t id, const std::string& reason) {
  if (id >= devices_.size()) return absl::NotFoundError(absl::StrCat("device ", id, " not found"));
  {
    MutexLock transition(state_mu_);
    Device& d = *devices_[id];
    {
      MutexLock lock(mu_);
      if (d.record.state == DeviceState::kFailed || d.record.state == DeviceState::kDown) {
        return absl::FailedPreconditionError(
            absl::StrCat("device ", id, " is already ", DeviceStateName(d.record.state)));
      }
    }
    const int64_t now_ms = absl::ToUnixMillis(absl::Now());
    if (absl::Status s = catalog_->SetDeviceDown(id, now_ms, reason); !s.ok()) return s;
    MutexLock lock(mu_);
    d.record.state = DeviceState::kDown;
    d.record.down_since_unix_ms = now_ms;
    d.record.down_reason = reason;
  }
  Log(LogLevel::kError, "device %d is down: %s", id, reason);
  NotifyRepair();
  absl::StatusOr<std::vector<DeviceStatus>> all = ListDevices();
  if (!all.ok()) return all.status();
  return (*all)[id];
}

absl::StatusOr<DeviceStatus> StoreCore::ReplaceDevice(uint32_t id) {
  if (id >= devices_.size()) {
    return absl::NotFoundError(absl::StrCat("device ", id, " not found; devices are 0..",
                                            devices_.size() - 1, " (`ecctl device ls`)"));
  }
  {
    MutexLock transition(state_mu_);
    Device& d = *devices_[id];
    DeviceRecord r;
    {
      MutexLock lock(mu_);
      r = d.record;
    }
    if (r.state != DeviceState::kFailed && r.state != DeviceState::kDown) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device ", id, " is ", DeviceStateName(r.state),
          "; only a failed or down device can be replaced (`ecctl device fail ", id,
          "` first, or `ecctl device evacuate ", id, "` to move its blocks off while it reads)"));
    }
    // First the catalog: every block on the device is corrupt and its label forgotten, so that a
    // crash from here on never trusts the blank namespace; the device stays failed or down.
    if (absl::Status s = catalog_->PrepareReplacement(id); !s.ok()) return s;
    const std::string path = DevicePath(options_.data_dir, r.path);
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) {
      std::filesystem::remove(path, ec);  // A block device is reused as it is, not removed.
    }
    absl::StatusOr<std::unique_ptr<Namespace>> ns =
        OpenDevice(r, /*create=*/true, /*label_lba=*/std::nullopt);
    if (!ns.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device ", id, "'s new namespace cannot be opened: ", ns.status().message()));
    }
    std::optional<uint64_t> lba;
    {
      MutexLock lock(mu_);
      d.ns = std::move(*ns);
      lba = d.label_lba ? d.label_lba : d.allocator.Allocate(1);
    }
    if (!lba) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "device ", id, " has no free LBA for its label; free space on it and retry"));
    }
    // The blank namespace gets a new log, in the old one's place when there was one.
    if (absl::Status s = WriteLabel(id, *lba, RecordLogPlace{}); !s.ok()) return s;
    if (absl::Status s = CreateRecordLog(d); !s.ok()) return s;
    if (absl::Status s = catalog_->SetDeviceState(id, DeviceState::kOnline); !s.ok()) return s;
    MutexLock lock(mu_);
    d.label_lba = lba;
    d.record.state = DeviceState::kOnline;
    d.record.down_since_unix_ms = 0;
    d.record.down_reason.clear();
    d.write_errors_in_a_row = 0;
  }
  Log(LogLevel::kInfo, "device %d was replaced by a blank namespace; its blocks are rebuilt", id);
  NotifyRepair();
  absl::StatusOr<std::vector<DeviceStatus>> all = ListDevices();
  if (!all.ok()) return all.status();
  return (*all)[id];
}

Namespace::Done StoreCore::TrackWrite(uint32_t device, Namespace::Done done) {
  return [this, device, done = std::move(done)](absl::Status s) mutable {
    Device& d = *devices_[device];
    if (s.ok()) {
      d.write_errors_in_a_row.store(0, std::memory_order_relaxed);
    } else if (IsFileSystemFull(s)) {
      // The file system under it is full: the device is not at fault.
    } else if (d.write_errors_in_a_row.fetch_add(1, std::memory_order_relaxed) + 1 ==
               options_.write_errors_to_down) {
      NotifyRepair();
    }
    done(std::move(s));
  };
}

std::vector<uint32_t> StoreCore::DownDevicesWithFailingWrites() {
  std::vector<uint32_t> out;
  if (options_.write_errors_to_down == 0) return out;
  for (auto& d : devices_) {
    const uint32_t errors = d->write_errors_in_a_row.load(std::memory_order_relaxed);
    if (errors < options_.write_errors_to_down) continue;
    absl::StatusOr<DeviceStatus> s =
        MarkDeviceDown(d->record.id, absl::StrCat(errors, " ", kWritesFailed));
    if (s.ok()) out.push_back(d->record.id);
    d->write_errors_in_a_row.store(0, std::memory_order_relaxed);
  }
  return out;
}

std::vector<DeviceRecord> StoreCore::DeviceRecords() {
  MutexLock lock(mu_);
  std::vector<DeviceRecord> out;
  for (const auto& d : devices_) out.push_back(d->record);
  return out;
}

void StoreCore::SetRepairListener(std::function<void()> fn) {
  MutexLock lock(mu_);
  repair_listener_ = std::move(fn);
  listener_idle_.Wait(mu_,
                      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return listener_calls_ == 0; });
}

void StoreCore::NotifyRepair() {
  std::function<void()> listener;
  {
    MutexLock lock(mu_);
    if (!repair_listener_) return;
    listener = repair_listener_;
    ++listener_calls_;
  }
  listener();
  MutexLock lock(mu_);
  if (--listener_calls_ == 0) listener_idle_.NotifyAll();
}

std::map<uint32_t, uint64_t> StoreCore::StripesByParity() const {
  MutexLock lock(census_mu_);
  return stripes_by_parity_;
}

void StoreCore::CountStripes(uint32_t parity, int64_t delta) {
  MutexLock lock(census_mu_);
  uint64_t& n = stripes_by_parity_[parity];
  n = static_cast<uint64_t>(static_cast<int64_t>(n) + delta);
  if (n == 0) stripes_by_parity_.erase(parity);
}

void StoreCore::CountObjects(int64_t objects, int64_t bytes) {
  MutexLock lock(census_mu_);
  totals_.objects = static_cast<uint64_t>(static_cast<int64_t>(totals_.objects) + objects);
  totals_.bytes = static_cast<uint64_t>(static_cast<int64_t>(totals_.bytes) + bytes);
}

absl::StatusOr<DamageTotals> StoreCore::Damage() {
  std::vector<uint32_t> unhealthy;
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    if (!DeviceOnline(d)) unhealthy.push_back(d);
  }
  return catalog_->CountDamage(unhealthy);
}

ObjectTotals StoreCore::Totals() const {
  MutexLock lock(census_mu_);
  return totals_;
}

absl::StatusOr<std::vector<DeviceStatus>> StoreCore::ListDevices() {
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> counts =
      catalog_->BlockCountsByDevice();
  if (!counts.ok()) return counts.status();
  MutexLock lock(mu_);
  std::vector<DeviceStatus> out;
  for (const auto& d : devices_) {
    DeviceStatus s;
    s.record = d->record;
    s.used_bytes = d->allocator.used_lbas() * d->record.lba_size;
    s.free_bytes = d->allocator.free_lbas() * d->record.lba_size;
    s.metadata_bytes = ((d->label_lba ? 1 : 0) + d->log_place.lba_count) * d->record.lba_size;
    s.flush_failures = d->flush_failures;
    if (d->ns) s.counters = d->ns->Counters();
    out.push_back(s);
  }
  for (const auto& [id, n] : *counts) {
    if (id < out.size()) out[id].blocks = n;
  }
  return out;
}

absl::StatusOr<DeviceStatus> StoreCore::SetDeviceState(uint32_t id, DeviceState state,
                                                       std::optional<DeviceState> only_from) {
  if (id >= devices_.size()) {
    return absl::NotFoundError(absl::StrCat("device ", id, " not found; devices are 0..",
                                            devices_.size() - 1, " (`ecctl device ls`)"));
  }
  Device& d = *devices_[id];
  MutexLock transition(state_mu_);  // One state change at a time.
  if (only_from) {
    MutexLock lock(mu_);
    if (d.record.state != *only_from) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", id, " is ", DeviceStateName(d.record.state), " now"));
    }
  }
  if (state == DeviceState::kFailing) {
    MutexLock lock(mu_);
    if (d.record.state != DeviceState::kOnline || d.ns == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", id, " is ", DeviceStateName(d.record.state),
                       "; only an online device can be marked failing (to be evacuated)"));
    }
  }
  if (state == DeviceState::kDown) {
    return absl::InvalidArgumentError("a device is marked down by MarkDeviceDown, not here");
  }
  if (state == DeviceState::kOnline) {
    bool reopen;
    std::optional<uint64_t> label_lba;
    {
      MutexLock lock(mu_);
      reopen = d.ns == nullptr || d.record.state == DeviceState::kFailed ||
               d.record.state == DeviceState::kDown;
      label_lba = d.label_lba;
    }
    if (reopen) {  // A repaired device: open its namespace again and check its label.
      DeviceLabel label;
      absl::StatusOr<std::unique_ptr<Namespace>> ns =
          OpenDevice(d.record, /*create=*/false, label_lba, &label);
      if (!ns.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "device ", id, " cannot be brought online: ", ns.status().message(),
            ". Fix it and retry, or put a new blank namespace in its slot with `ecctl device "
            "replace ",
            id, "`"));
      }
      {
        MutexLock lock(mu_);
        d.ns = std::move(*ns);  // I/O still holding the old handle finishes on it.
        d.write_errors_in_a_row = 0;
      }
      if (!label_lba) {
        if (absl::Status s = LabelDevice(d); !s.ok()) return s;
      }
      if (absl::Status s = ReopenRecordLog(d, label.log); !s.ok()) return s;
    } else if (records_->log(id) == nullptr) {  // Its log could not be written before.
      if (absl::Status s = ReopenRecordLog(d, {}); !s.ok()) return s;
    }
  }
  if (absl::Status s = catalog_->SetDeviceState(id, state); !s.ok()) return s;
  {
    MutexLock lock(mu_);
    d.record.state = state;
    d.record.down_since_unix_ms = 0;
    d.record.down_reason.clear();
  }
  Log(LogLevel::kInfo, "device %d is now %s", id, DeviceStateName(state));
  NotifyRepair();
  absl::StatusOr<std::vector<DeviceStatus>> all = ListDevices();
  if (!all.ok()) return all.status();
  return (*all)[id];
}

}  // namespace ecd::store
