// Names for CXL event record values as the Linux cxl tracepoints print them, flag sets rendered
// like the kernel's __print_flags, and the warnings for values that have no name.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/cxl/event_record.h"
#include "lib/cxl/event_record_fields.h"

namespace ecd::cxl {
namespace {

using internal::Raw;

// A bit and the name the kernel's __print_flags table gives it.
struct FlagName {
  uint32_t bit;
  std::string_view name;
};

// Renders like the kernel's trace_print_flags_seq(): matched names joined by `delim`, then
// the unmatched remainder as hex.
template <size_t N>
std::string FlagsString(uint32_t flags, std::string_view delim, const FlagName (&table)[N]) {
  std::string out;
  for (const FlagName& f : table) {
    if ((flags & f.bit) != f.bit) continue;
    if (!out.empty()) out.append(delim);
    out.append(f.name);
    flags &= ~f.bit;
  }
  if (flags != 0) {
    if (!out.empty()) out.append(delim);
    absl::StrAppend(&out, absl::StrFormat("0x%x", flags));
  }
  return out;
}

template <typename E>
void WarnIfReserved(std::vector<std::string>& w, std::string_view field, E v) {
  if (!IsKnown(v)) w.push_back(absl::StrFormat("reserved %s 0x%02x", field, Raw(v)));
}

}  // namespace

std::string_view RecordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kGeneralMedia:
      return "General Media";
    case RecordKind::kDram:
      return "DRAM";
    case RecordKind::kMemoryModule:
      return "Memory Module";
    case RecordKind::kMemorySparing:
      return "Memory Sparing";
    case RecordKind::kDynamicCapacity:
      return "Dynamic Capacity";
    case RecordKind::kPhysicalSwitch:
      return "Physical Switch";
    case RecordKind::kVirtualSwitch:
      return "Virtual Switch";
    case RecordKind::kMldPort:
      return "MLD Port";
    case RecordKind::kUnknown:
      break;
  }
  return "Unknown";
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInformational:
      return "Informational";
    case Severity::kWarning:
      return "Warning";
    case Severity::kFailure:
      return "Failure";
    case Severity::kFatal:
      return "Fatal";
  }
  return "Reserved";
}

bool IsKnown(GmerEventType v) { return Raw(v) <= Raw(GmerEventType::kCkidViolation); }
bool IsKnown(DramEventType v) { return Raw(v) <= Raw(DramEventType::kCkidViolation); }
bool IsKnown(TransactionType v) { return Raw(v) <= Raw(TransactionType::kMediaInitialization); }
bool IsKnown(MemEventSubType v) { return Raw(v) <= Raw(MemEventSubType::kMediaLinkCrcError); }
bool IsKnown(MemModuleEventType v) {
  return Raw(v) <= Raw(MemModuleEventType::kPowerManagementFault);
}
bool IsKnown(MemModuleEventSubType v) {
  return Raw(v) <= Raw(MemModuleEventSubType::kUnsupportedMemoryMediaFru);
}
bool IsKnown(MediaStatus v) { return Raw(v) <= Raw(MediaStatus::kAllDataLossImminent); }

std::string_view GmerEventTypeName(GmerEventType v) {
  switch (v) {
    case GmerEventType::kEccError:
      return "ECC Error";
    case GmerEventType::kInvalidAddress:
      return "Invalid Address";
    case GmerEventType::kDataPathError:
      return "Data Path Error";
    case GmerEventType::kTeStateViolation:
      return "TE State Violation";
    case GmerEventType::kScrubMediaEccError:
      return "Scrub Media ECC Error";
    case GmerEventType::kAdvProgCmeCounterExpiration:
      return "Adv Prog CME Counter Expiration";
    case GmerEventType::kCkidViolation:
      return "CKID Violation";
  }
  return "Reserved";
}

std::string_view DramEventTypeName(DramEventType v) {
  switch (v) {
    case DramEventType::kEccError:
      return "ECC Error";
    case DramEventType::kScrubMediaEccError:
      return "Scrub Media ECC Error";
    case DramEventType::kInvalidAddress:
      return "Invalid Address";
    case DramEventType::kDataPathError:
      return "Data Path Error";
    case DramEventType::kTeStateViolation:
      return "TE State Violation";
    case DramEventType::kAdvProgCmeCounterExpiration:
      return "Adv Prog CME Counter Expiration";
    case DramEventType::kCkidViolation:
      return "CKID Violation";
  }
  return "Reserved";
}

std::string_view TransactionTypeName(TransactionType v) {
  switch (v) {
    case TransactionType::kUnknown:
      return "Unknown";
    case TransactionType::kHostRead:
      return "Host Read";
    case TransactionType::kHostWrite:
      return "Host Write";
    case TransactionType::kHostScanMedia:
      return "Host Scan Media";
    case TransactionType::kHostInjectPoison:
      return "Host Inject Poison";
    case TransactionType::kInternalMediaScrub:
      return "Internal Media Scrub";
    case TransactionType::kInternalMediaManagement:
      return "Internal Media Management";
    case TransactionType::kInternalMediaErrorCheckScrub:
      return "Internal Media Error Check Scrub";
    case TransactionType::kMediaInitialization:
      return "Media Initialization";
  }
  return "Reserved";
}

std::string_view MemEventSubTypeName(MemEventSubType v) {
  switch (v) {
    case MemEventSubType::kNotReported:
      return "Not Reported";
    case MemEventSubType::kInternalDatapathError:
      return "Internal Datapath Error";
    case MemEventSubType::kMediaLinkCommandTrainingError:
      return "Media Link Command Training Error";
    case MemEventSubType::kMediaLinkControlTrainingError:
      return "Media Link Control Training Error";
    case MemEventSubType::kMediaLinkDataTrainingError:
      return "Media Link Data Training Error";
    case MemEventSubType::kMediaLinkCrcError:
      return "Media Link CRC Error";
  }
  return "Reserved";
}

std::string_view MemModuleEventTypeName(MemModuleEventType v) {
  switch (v) {
    case MemModuleEventType::kHealthStatusChange:
      return "Health Status Change";
    case MemModuleEventType::kMediaStatusChange:
      return "Media Status Change";
    case MemModuleEventType::kLifeUsedChange:
      return "Life Used Change";
    case MemModuleEventType::kTemperatureChange:
      return "Temperature Change";
    case MemModuleEventType::kDataPathError:
      return "Data Path Error";
    case MemModuleEventType::kLsaError:
      return "LSA Error";
    case MemModuleEventType::kUnrecoverableSidebandBusError:
      return "Unrecoverable Internal Sideband Bus Error";
    case MemModuleEventType::kMemoryMediaFruError:
      return "Memory Media FRU Error";
    case MemModuleEventType::kPowerManagementFault:
      return "Power Management Fault";
  }
  return "Reserved";
}

std::string_view MemModuleEventSubTypeName(MemModuleEventSubType v) {
  switch (v) {
    case MemModuleEventSubType::kNotReported:
      return "Not Reported";
    case MemModuleEventSubType::kInvalidConfigData:
      return "Invalid Config Data";
    case MemModuleEventSubType::kUnsupportedConfigData:
      return "Unsupported Config Data";
    case MemModuleEventSubType::kUnsupportedMemoryMediaFru:
      return "Unsupported Memory Media FRU";
  }
  return "Reserved";
}

std::string_view MediaStatusName(MediaStatus v) {
  // Spelled as the kernel's show_media_status table spells them, inconsistencies included.
  switch (v) {
    case MediaStatus::kNormal:
      return "Normal";
    case MediaStatus::kNotReady:
      return "Not Ready";
    case MediaStatus::kWritePersistencyLost:
      return "Write Persistency Lost";
    case MediaStatus::kAllDataLost:
      return "All Data Lost";
    case MediaStatus::kWritePersistencyLossOnPowerLoss:
      return "Write Persistency Loss in the Event of Power Loss";
    case MediaStatus::kWritePersistencyLossOnShutdown:
      return "Write Persistency Loss in Event of Shutdown";
    case MediaStatus::kWritePersistencyLossImminent:
      return "Write Persistency Loss Imminent";
    case MediaStatus::kAllDataLossOnPowerLoss:
      return "All Data Loss in Event of Power Loss";
    case MediaStatus::kAllDataLossOnShutdown:
      return "All Data loss in the Event of Shutdown";
    case MediaStatus::kAllDataLossImminent:
      return "All Data Loss Imminent";
  }
  return "Reserved";
}

std::string_view AdditionalStatusName(uint8_t v) {
  switch (v) {
    case 0:
      return "Normal";
    case 1:
      return "Warning";
    case 2:
      return "Critical";
    default:
      return "Reserved";
  }
}

std::string HeaderFlagsString(uint32_t flags) {
  static constexpr FlagName kTable[] = {
      {kFlagPermanentCondition, "PERMANENT_CONDITION"},
      {kFlagMaintenanceNeeded, "MAINTENANCE_NEEDED"},
      {kFlagPerformanceDegraded, "PERFORMANCE_DEGRADED"},
      {kFlagHardwareReplacementNeeded, "HARDWARE_REPLACEMENT_NEEDED"},
      {kFlagMaintOpSubClassValid, "MAINT_OP_SUB_CLASS_VALID"},
  };
  return FlagsString(flags, " | ", kTable);
}

std::string DpaFlagsString(uint8_t dpa_flags) {
  static constexpr FlagName kTable[] = {
      {kDpaVolatile, "VOLATILE"},
      {kDpaNotRepairable, "NOT_REPAIRABLE"},
  };
  return FlagsString(dpa_flags, "|", kTable);
}

std::string DescriptorString(uint8_t descriptor) {
  static constexpr FlagName kTable[] = {
      {kDescriptorUncorrectable, "UNCORRECTABLE_EVENT"},
      {kDescriptorThreshold, "THRESHOLD_EVENT"},
      {kDescriptorPoisonListOverflow, "POISON_LIST_OVERFLOW"},
  };
  return FlagsString(descriptor, "|", kTable);
}

std::string GmerValidityString(uint16_t validity) {
  static constexpr FlagName kTable[] = {
      {kGmerValidChannel, "CHANNEL"},
      {kGmerValidRank, "RANK"},
      {kGmerValidDevice, "DEVICE"},
      {kGmerValidComponent, "COMPONENT"},
      {kGmerValidComponentIdFormat, "COMPONENT PLDM FORMAT"},
  };
  return FlagsString(validity, "|", kTable);
}

std::string DramValidityString(uint16_t validity) {
  static constexpr FlagName kTable[] = {
      {kDramValidChannel, "CHANNEL"},
      {kDramValidRank, "RANK"},
      {kDramValidNibbleMask, "NIBBLE"},
      {kDramValidBankGroup, "BANK GROUP"},
      {kDramValidBank, "BANK"},
      {kDramValidRow, "ROW"},
      {kDramValidColumn, "COLUMN"},
      {kDramValidCorrectionMask, "CORRECTION MASK"},
      {kDramValidComponent, "COMPONENT"},
      {kDramValidComponentIdFormat, "COMPONENT PLDM FORMAT"},
      {kDramValidSubChannel, "SUB CHANNEL"},
  };
  return FlagsString(validity, "|", kTable);
}

std::string MemModuleValidityString(uint16_t validity) {
  static constexpr FlagName kTable[] = {
      {kMemModuleValidComponent, "COMPONENT"},
      {kMemModuleValidComponentIdFormat, "COMPONENT PLDM FORMAT"},
  };
  return FlagsString(validity, "|", kTable);
}

std::string HealthStatusString(uint8_t health_status) {
  static constexpr FlagName kTable[] = {
      {kHealthMaintenanceNeeded, "MAINTENANCE_NEEDED"},
      {kHealthPerformanceDegraded, "PERFORMANCE_DEGRADED"},
      {kHealthReplacementNeeded, "REPLACEMENT_NEEDED"},
      {kHealthMemCapacityDegraded, "MEM_CAPACITY_DEGRADED"},
  };
  return FlagsString(health_status, "|", kTable);
}

std::string CmeThresholdFlagsString(uint8_t flags) {
  static constexpr FlagName kTable[] = {
      {kCmeMultipleMedia, "Corrected Memory Errors in Multiple Media Components"},
      {kCmeThresholdExceeded, "Exceeded Programmable Threshold"},
  };
  return FlagsString(flags, "|", kTable);
}

std::vector<std::string> RecordWarnings(const EventRecord& record) {
  std::vector<std::string> w;
  const EventHeader& h = HeaderOf(record);
  if (h.reserved_flags() != 0) {
    w.push_back(absl::StrFormat("reserved header flag bits 0x%06x set", h.reserved_flags()));
  }
  if (const auto* g = std::get_if<GeneralMediaRecord>(&record)) {
    WarnIfReserved(w, "general media event type", g->type);
    WarnIfReserved(w, "transaction type", g->transaction_type);
    WarnIfReserved(w, "memory event sub-type", g->sub_type);
  } else if (const auto* d = std::get_if<DramRecord>(&record)) {
    WarnIfReserved(w, "DRAM event type", d->type);
    WarnIfReserved(w, "transaction type", d->transaction_type);
    WarnIfReserved(w, "memory event sub-type", d->sub_type);
  } else if (const auto* m = std::get_if<MemoryModuleRecord>(&record)) {
    WarnIfReserved(w, "memory module event type", m->event_type);
    WarnIfReserved(w, "media status", m->health.media_status);
    WarnIfReserved(w, "memory module event sub-type", m->event_sub_type);
  } else if (const auto* x = std::get_if<GenericRecord>(&record);
             x != nullptr && x->kind == RecordKind::kUnknown) {
    w.push_back(absl::StrCat("unknown event record UUID ", x->uuid.ToString()));
  }
  return w;
}

}  // namespace ecd::cxl
