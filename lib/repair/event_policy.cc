// EventPolicy: health report -> action, through the rebuild scheduler.
#include "lib/repair/event_policy.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

using store::DeviceState;
using store::DeviceStatus;
using store::Store;

const char* PolicyActionName(PolicyAction a) { return kPolicyActions.Name(a).data(); }

absl::StatusOr<PolicyAction> ParsePolicyAction(const std::string& name) {
  for (const EnumName<PolicyAction>& e : kPolicyActions.entries()) {
    if (name == e.name) return e.value;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown CXL policy action \"", name,
                                                 "\"; use one of ",
                                                 absl::StrJoin(PolicyActionNames(), ", ")));
}

std::vector<std::string> PolicyActionNames() {
  std::vector<std::string> names;
  for (const EnumName<PolicyAction>& e : kPolicyActions.entries()) names.emplace_back(e.name);
  return names;
}

EventPolicy::EventPolicy(Store* store, RepairPlanner* rebuilds, const EventPolicyOptions& options)
    : store_(store), rebuilds_(rebuilds), options_(options) {}

absl::Status EventPolicy::Check(const HealthEvent& e) const {
  for (const store::DeviceRecord& d : store_->admin().DeviceRecords()) {
    if (d.id != e.device) continue;
    if ((e.kind == HealthEvent::Kind::kGeneralMedia || e.kind == HealthEvent::Kind::kDram) &&
        e.dpa >= d.size_bytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("DPA %#x is past the end of device %d: its DPAs are below %#x (%d "
                          "bytes)",
                          e.dpa, e.device, d.size_bytes, d.size_bytes));
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device ", e.device, " does not exist (ecctl device ls)"));
}

std::pair<PolicyAction, std::string> EventPolicy::Decide(const HealthEvent& e) const {
  if (e.severity == 3 || e.log == 3) return {options_.fatal, "fatal severity"};
  if (e.kind == HealthEvent::Kind::kMemoryModule) {
    if (e.replacement_needed || (e.health_status & 0x4) != 0) {
      return {options_.module_critical, "hardware replacement needed"};
    }
    if (e.media_status == 3 || e.media_status == 9 || e.media_status == 7 || e.media_status == 8) {
      return {options_.module_critical,
              absl::StrCat("media status ", e.media_status, " (data lost or loss imminent)")};
    }
    if ((e.additional_status & 0x3) == 2 || e.life_used >= options_.life_used_critical) {
      return {options_.module_critical, absl::StrCat("life used critical (", e.life_used, "%)")};
    }
    if (((e.additional_status >> 2) & 0x3) == 2 || e.temperature >= options_.temperature_critical) {
      return {options_.module_critical,
              absl::StrCat("temperature critical (", e.temperature, " C)")};
    }
  }
  if ((e.kind == HealthEvent::Kind::kGeneralMedia || e.kind == HealthEvent::Kind::kDram) &&
      (e.descriptor & 0x3) != 0) {
    return {options_.media_error,
            (e.descriptor & 0x1) ? "uncorrectable media error" : "media error threshold"};
  }
  return {options_.other, "informational"};
}

PolicyAction EventPolicy::Handle(const HealthEvent& e) {
  auto [action, why] = Decide(e);
  {
    MutexLock lock(mu_);
    ++counters_[PolicyActionName(action)];
  }
  const std::string reason = absl::StrCat("CXL: ", why, ": ", e.description);
  switch (action) {
    case PolicyAction::kIgnore:
    case PolicyAction::kCount:
      Log(LogLevel::kDebug, "device %d: %s (counted)", e.device, reason);
      break;
    case PolicyAction::kFail: {
      Log(LogLevel::kError, "device %d failed by policy: %s", e.device, reason);
      absl::StatusOr<DeviceStatus> s =
          store_->admin().SetDeviceState(e.device, DeviceState::kFailed);
      if (!s.ok())
        Log(LogLevel::kError, "cannot fail device %d: %s", e.device, s.status().message());
      break;
    }
    case PolicyAction::kEvacuate: {
      Log(LogLevel::kWarning, "device %d to be evacuated: %s", e.device, reason);
      RebuildSpec spec;
      spec.kind = RebuildKind::kEvacuateDevice;
      spec.device = e.device;
      spec.reason = reason;
      rebuilds_->Submit(spec);
      break;
    }
    case PolicyAction::kRebuildRange: {
      const uint32_t lba_size = store_->admin().lba_size();
      RebuildSpec spec;
      spec.kind = RebuildKind::kMediaRange;
      spec.device = e.device;
      spec.first_lba = e.dpa / lba_size;
      spec.lba_count = 1;  // a DPA names one 64-byte line, inside one LBA
      spec.reason = reason;
      Log(LogLevel::kWarning, "device %d LBA %d: moving the blocks there: %s", e.device,
          spec.first_lba, reason);
      rebuilds_->Submit(spec);
      break;
    }
  }
  return action;
}

std::map<std::string, uint64_t> EventPolicy::counters() const {
  MutexLock lock(mu_);
  return counters_;
}

}  // namespace ecd::repair
