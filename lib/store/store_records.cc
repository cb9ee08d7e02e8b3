// Store: the catalog and the devices' block records at start-up. A catalog that is missing,
// empty, damaged or behind what its devices say was committed is refused with what to do; the
// record logs are opened, created for devices without one, and snapshot where they may hold
// records of operations that never committed (docs/formats.md, "The commit point").
#include <algorithm>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "lib/records/record_keeper.h"
#include "lib/records/record_log.h"
#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::store {
namespace {

// Set by a catalog rebuild: every log is snapshot at the next start.
constexpr char kResnapshotKey[] = "records/snapshot_all";

// Namespace files in <data_dir>/devices.
int CountNamespaces(const std::string& data_dir) {
  std::error_code ec;
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(data_dir) / "devices", ec)) {
    n += e.path().extension() == ".ns";
  }
  return n;
}

std::string RebuildAdvice(const std::string& data_dir) {
  return absl::StrCat(
      "ecd will not start on it and changed nothing. Rebuild the catalog from the devices: ecd "
      "--data-dir ",
      data_dir,
      " --rebuild-catalog (the old one is kept aside; docs/operations.md, \"The catalog is lost "
      "or damaged\")");
}

}  // namespace

absl::Status StoreCore::OpenCatalog() {
  const std::string path = (std::filesystem::path(options_.data_dir) / "catalog.db").string();
  const int namespaces = CountNamespaces(options_.data_dir);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  const bool empty = exists && std::filesystem::file_size(path, ec) == 0;
  if ((!exists || empty) && namespaces > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the catalog ", path, exists ? " is empty" : " is missing", " but ", options_.data_dir,
        "/devices holds ", namespaces, " device namespaces: ", RebuildAdvice(options_.data_dir)));
  }
  absl::StatusOr<std::unique_ptr<Catalog>> catalog = Catalog::Open(path);
  if (!catalog.ok()) {
    if (!exists) return catalog.status();
    return absl::FailedPreconditionError(absl::StrCat("the catalog ", path, " cannot be read (",
                                                      catalog.status().message(),
                                                      "): ", RebuildAdvice(options_.data_dir)));
  }
  catalog_ = std::make_unique<FencedCatalog>(std::move(*catalog));
  absl::StatusOr<std::optional<std::string>> store_id = catalog_->GetMeta("store_id");
  if (!store_id.ok()) return store_id.status();
  if (!store_id->has_value() && namespaces > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the catalog ", path, " is new (it has no store id) but ", options_.data_dir,
        "/devices holds ", namespaces, " device namespaces: ", RebuildAdvice(options_.data_dir)));
  }
  return absl::OkStatus();
}

absl::Status StoreCore::RefuseDamagedCatalog(const absl::Status& damage) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "the catalog ", (std::filesystem::path(options_.data_dir) / "catalog.db").string(),
      " is damaged (", damage.message(), "): ", RebuildAdvice(options_.data_dir)));
}

absl::Status StoreCore::OpenRecordLogs() {
  absl::StatusOr<uint64_t> catalog_seq = catalog_->CommitSeq();
  if (!catalog_seq.ok()) return catalog_seq.status();
  absl::StatusOr<std::optional<std::string>> resnapshot = catalog_->GetMeta(kResnapshotKey);
  if (!resnapshot.ok()) return resnapshot.status();
  uint64_t mark = 0, max_seq = *catalog_seq;
  uint32_t mark_device = 0;
  bool unclean = resnapshot->has_value();
  std::map<uint32_t, std::shared_ptr<RecordLog>> logs;
  for (auto& d : devices_) {
    if (d->ns == nullptr || d->log_place.empty() || d->record.state == DeviceState::kFailed) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<RecordLog>> log =
        RecordLog::Open(d->ns, d->log_place, store_id_, d->record.id);
    if (!log.ok()) {
      Log(LogLevel::kWarning, "device %d: its record log cannot be read (%s); it is written anew",
          d->record.id, log.status().message());
      continue;
    }
    const RecordLogState& state = (*log)->opened_state();
    if (state.committed_through > mark) {
      mark = state.committed_through;
      mark_device = d->record.id;
    }
    max_seq = std::max(max_seq, state.max_seq);
    if (!state.clean) unclean = true;
    if (!state.clean || resnapshot->has_value()) stale_logs_.insert(d->record.id);
    logs[d->record.id] = std::move(*log);
  }
  if (mark > *catalog_seq) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the catalog is behind its devices: it has committed operations through number ",
        *catalog_seq, ", but device ", mark_device, " records that operation ", mark,
        " was committed, so committed operations are missing from it (an older copy of "
        "catalog.db was put back, or its write-ahead log catalog.db-wal was damaged or lost). ",
        RebuildAdvice(options_.data_dir)));
  }
  if (unclean) {
    if (absl::Status s = catalog_->IntegrityCheck(); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("after an unclean stop, ", s.message(),
                                                        ". ", RebuildAdvice(options_.data_dir)));
    }
  }
  if (max_seq > *catalog_seq) {
    // Operations numbered past the catalog's mark never committed (a stop came before their
    // catalog transaction): they are aborted, and the marks written from now on (snapshots,
    // checkpoints) say so. The catalog says it first, so that it is never behind a mark.
    if (absl::Status s = catalog_->AdvanceCommitSeq(max_seq); !s.ok()) return s;
  }
  for (auto& [id, log] : logs) {
    // A log that missed operations (its device was away) may hold records they superseded.
    if (log->opened_state().committed_through < mark) stale_logs_.insert(id);
  }
  RecordKeeper::Hooks hooks;
  hooks.blocks_on_device = [this](uint32_t device, const auto& fn) {
    return catalog_->ForEachBlockOnDevice(device, fn);
  };
  hooks.empty_objects = [this](const auto& fn) { return catalog_->ForEachEmptyObject(fn); };
  hooks.advance_catalog = [this](uint64_t seq) { return catalog_->AdvanceCommitSeq(seq); };
  records_ = std::make_unique<RecordKeeper>(std::move(hooks), max_seq + 1);
  for (auto& [id, log] : logs) records_->SetLog(id, std::move(log));
  return absl::OkStatus();
}

RecordLogPlace StoreCore::AllocateRecordLog(Device& d) {
  const uint32_t lba_size = d.record.lba_size;
  const size_t page_bytes = RecordPageBytes(lba_size, options_.max_name_length);
  const uint64_t lbas = RecordLogLbas(d.record.size_bytes / lba_size, lba_size, page_bytes);
  // Page-aligned, so that reserving its space (ReserveRecordLog) takes no file-system block that
  // a neighbouring extent shares and punches when freed.
  const uint64_t align = std::max<uint64_t>(1, page_bytes / lba_size);
  MutexLock lock(mu_);
  std::optional<uint64_t> got = d.allocator.Allocate(lbas + align - 1);
  if (!got) return {};
  const uint64_t first = (*got + align - 1) / align * align;
  const uint64_t slack_after = *got + align - 1 - first;
  if (first > *got) (void)d.allocator.Free(*got, first - *got);
  if (slack_after > 0) (void)d.allocator.Free(first + lbas, slack_after);
  return {first, lbas, static_cast<uint32_t>(page_bytes)};
}

void StoreCore::ReserveRecordLog(uint32_t id, Namespace& ns, const RecordLogPlace& place) {
  // Whole pages only: a file-system block shared with a neighbouring extent is left alone.
  const uint64_t per_page = std::max<uint64_t>(1, place.page_bytes / ns.lba_size());
  const uint64_t first = (place.first_lba + per_page - 1) / per_page * per_page;
  const uint64_t end = (place.first_lba + place.lba_count) / per_page * per_page;
  if (end <= first) return;
  if (absl::Status s = ns.Reserve(first, end - first); !s.ok()) {
    Log(LogLevel::kWarning,
        "device %d: its block-record log cannot take its space now (%s); record writes may fail "
        "when the file system is full, and fail their requests",
        id, s.message());
  }
}

absl::Status StoreCore::CreateRecordLog(Device& d) {
  const uint32_t id = d.record.id;
  RecordLogPlace place;
  std::shared_ptr<Namespace> ns;
  std::optional<uint64_t> label_lba;
  {
    MutexLock lock(mu_);
    place = d.log_place;
    ns = d.ns;
    label_lba = d.label_lba;
  }
  if (ns == nullptr || !label_lba) return absl::OkStatus();
  const bool fresh = place.empty();
  if (fresh) place = AllocateRecordLog(d);
  if (place.empty()) {
    Log(LogLevel::kWarning,
        "device %d has no free region for its block-record log: its blocks have no on-device "
        "records, and a catalog rebuild cannot find them. Free space on it (delete objects or "
        "evacuate it) and restart ecd",
        id);
    return absl::OkStatus();
  }
  ReserveRecordLog(id, *ns, place);
  absl::StatusOr<std::unique_ptr<RecordLog>> log =
      RecordLog::Create(ns, place, store_id_, id, records_->max_seq());
  absl::Status s = log.status();
  if (s.ok()) {
    records_->SetLog(id, std::move(*log));
    s = records_->Snapshot(id);
  }
  if (s.ok()) s = WriteLabel(id, *label_lba, place);
  if (!s.ok()) {
    records_->SetLog(id, nullptr);
    if (fresh)
      FreeExtents({BlockRecord{0, 0, id, place.first_lba, static_cast<uint32_t>(place.lba_count), 0,
                               false}});
    return absl::Status(
        s.code(), absl::StrCat("creating the block-record log of device ", id, ": ", s.message()));
  }
  MutexLock lock(mu_);
  d.log_place = place;
  return absl::OkStatus();
}

absl::Status StoreCore::ReopenRecordLog(Device& d, const RecordLogPlace& labelled) {
  const uint32_t id = d.record.id;
  std::shared_ptr<Namespace> ns;
  {
    MutexLock lock(mu_);
    if (d.log_place.empty() && !labelled.empty() &&
        d.allocator.MarkUsed(labelled.first_lba, labelled.lba_count).ok()) {
      d.log_place = labelled;
    }
    ns = d.ns;
  }
  records_->SetLog(id, nullptr);
  RecordLogPlace place;
  {
    MutexLock lock(mu_);
    place = d.log_place;
  }
  if (!place.empty()) {
    ReserveRecordLog(id, *ns, place);
    absl::StatusOr<std::unique_ptr<RecordLog>> log = RecordLog::Open(ns, place, store_id_, id);
    if (log.ok()) {
      records_->SetLog(id, std::move(*log));
      return records_->Snapshot(id);
    }
    Log(LogLevel::kWarning, "device %d: its record log cannot be read (%s); it is written anew", id,
        log.status().message());
  }
  return CreateRecordLog(d);
}

absl::Status StoreCore::PrepareRecordLogs() {
  for (auto& d : devices_) {
    bool usable;
    {
      MutexLock lock(mu_);
      usable = d->ns != nullptr && d->record.state != DeviceState::kFailed;
    }
    if (!usable) continue;
    if (absl::Status s = PrepareRecordLog(*d); !s.ok()) {
      // A device that cannot write its records cannot be trusted with new blocks either; the
      // others still serve.
      records_->SetLog(d->record.id, nullptr);
      MarkSuspect(d->record.id, std::string(s.message()));
    }
  }
  stale_logs_.clear();
  return catalog_->DeleteMeta(kResnapshotKey);
}

absl::Status StoreCore::PrepareRecordLog(Device& d) {
  const uint32_t id = d.record.id;
  std::shared_ptr<RecordLog> log = records_->log(id);
  if (log == nullptr) {
    if (absl::Status s = CreateRecordLog(d); !s.ok()) return s;  // Reserves its space too.
  } else if (std::shared_ptr<Namespace> ns = NamespaceOf(id, /*online_only=*/false)) {
    ReserveRecordLog(id, *ns, log->place());
  }
  if (log != nullptr && stale_logs_.count(id) > 0) {
    if (absl::Status s = records_->Snapshot(id); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("snapshot of device ", id, "'s block-record log: ", s.message()));
    }
  }
  if (absl::Status s = records_->MarkRunning(id); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("marking device ", id,
                                               "'s block-record log running: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace ecd::store
