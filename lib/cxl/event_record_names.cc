// Names for CXL event record values as the Linux cxl tracepoints print them, flag sets rendered
// like the kernel's __print_flags, and the warnings for values that have no name.
#include "lib/cxl/event_record_names.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/cxl/event_record_fields.h"
#include "lib/util/enum_table.h"

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

// One (value, name) table per enumerated field; IsKnown and the *Name functions below derive
// from these alone.

constexpr EnumName<RecordKind> kRecordKindNames[] = {
    {RecordKind::kGeneralMedia, "General Media"},
    {RecordKind::kDram, "DRAM"},
    {RecordKind::kMemoryModule, "Memory Module"},
    {RecordKind::kMemorySparing, "Memory Sparing"},
    {RecordKind::kDynamicCapacity, "Dynamic Capacity"},
    {RecordKind::kPhysicalSwitch, "Physical Switch"},
    {RecordKind::kVirtualSwitch, "Virtual Switch"},
    {RecordKind::kMldPort, "MLD Port"},
};
constexpr EnumTable kRecordKinds(kRecordKindNames, "Unknown");

constexpr EnumName<Severity> kSeverityNames[] = {
    {Severity::kInformational, "Informational"},
    {Severity::kWarning, "Warning"},
    {Severity::kFailure, "Failure"},
    {Severity::kFatal, "Fatal"},
};
constexpr EnumTable kSeverities(kSeverityNames, "Reserved");

constexpr EnumName<GmerEventType> kGmerEventTypeNames[] = {
    {GmerEventType::kEccError, "ECC Error"},
    {GmerEventType::kInvalidAddress, "Invalid Address"},
    {GmerEventType::kDataPathError, "Data Path Error"},
    {GmerEventType::kTeStateViolation, "TE State Violation"},
    {GmerEventType::kScrubMediaEccError, "Scrub Media ECC Error"},
    {GmerEventType::kAdvProgCmeCounterExpiration, "Adv Prog CME Counter Expiration"},
    {GmerEventType::kCkidViolation, "CKID Violation"},
};
constexpr EnumTable kGmerEventTypes(kGmerEventTypeNames, "Reserved");

constexpr EnumName<DramEventType> kDramEventTypeNames[] = {
    {DramEventType::kEccError, "ECC Error"},
    {DramEventType::kScrubMediaEccError, "Scrub Media ECC Error"},
    {DramEventType::kInvalidAddress, "Invalid Address"},
    {DramEventType::kDataPathError, "Data Path Error"},
    {DramEventType::kTeStateViolation, "TE State Violation"},
    {DramEventType::kAdvProgCmeCounterExpiration, "Adv Prog CME Counter Expiration"},
    {DramEventType::kCkidViolation, "CKID Violation"},
};
constexpr EnumTable kDramEventTypes(kDramEventTypeNames, "Reserved");

constexpr EnumName<TransactionType> kTransactionTypeNames[] = {
    {TransactionType::kUnknown, "Unknown"},
    {TransactionType::kHostRead, "Host Read"},
    {TransactionType::kHostWrite, "Host Write"},
    {TransactionType::kHostScanMedia, "Host Scan Media"},
    {TransactionType::kHostInjectPoison, "Host Inject Poison"},
    {TransactionType::kInternalMediaScrub, "Internal Media Scrub"},
    {TransactionType::kInternalMediaManagement, "Internal Media Management"},
    {TransactionType::kInternalMediaErrorCheckScrub, "Internal Media Error Check Scrub"},
    {TransactionType::kMediaInitialization, "Media Initialization"},
};
constexpr EnumTable kTransactionTypes(kTransactionTypeNames, "Reserved");

constexpr EnumName<MemEventSubType> kMemEventSubTypeNames[] = {
    {MemEventSubType::kNotReported, "Not Reported"},
    {MemEventSubType::kInternalDatapathError, "Internal Datapath Error"},
    {MemEventSubType::kMediaLinkCommandTrainingError, "Media Link Command Training Error"},
    {MemEventSubType::kMediaLinkControlTrainingError, "Media Link Control Training Error"},
    {MemEventSubType::kMediaLinkDataTrainingError, "Media Link Data Training Error"},
    {MemEventSubType::kMediaLinkCrcError, "Media Link CRC Error"},
};
constexpr EnumTable kMemEventSubTypes(kMemEventSubTypeNames, "Reserved");

constexpr EnumName<MemModuleEventType> kMemModuleEventTypeNames[] = {
    {MemModuleEventType::kHealthStatusChange, "Health Status Change"},
    {MemModuleEventType::kMediaStatusChange, "Media Status Change"},
    {MemModuleEventType::kLifeUsedChange, "Life Used Change"},
    {MemModuleEventType::kTemperatureChange, "Temperature Change"},
    {MemModuleEventType::kDataPathError, "Data Path Error"},
    {MemModuleEventType::kLsaError, "LSA Error"},
    {MemModuleEventType::kUnrecoverableSidebandBusError,
     "Unrecoverable Internal Sideband Bus Error"},
    {MemModuleEventType::kMemoryMediaFruError, "Memory Media FRU Error"},
    {MemModuleEventType::kPowerManagementFault, "Power Management Fault"},
};
constexpr EnumTable kMemModuleEventTypes(kMemModuleEventTypeNames, "Reserved");

constexpr EnumName<MemModuleEventSubType> kMemModuleEventSubTypeNames[] = {
    {MemModuleEventSubType::kNotReported, "Not Reported"},
    {MemModuleEventSubType::kInvalidConfigData, "Invalid Config Data"},
    {MemModuleEventSubType::kUnsupportedConfigData, "Unsupported Config Data"},
    {MemModuleEventSubType::kUnsupportedMemoryMediaFru, "Unsupported Memory Media FRU"},
};
constexpr EnumTable kMemModuleEventSubTypes(kMemModuleEventSubTypeNames, "Reserved");

// Spelled as the kernel's show_media_status table spells them, inconsistencies included.
constexpr EnumName<MediaStatus> kMediaStatusNames[] = {
    {MediaStatus::kNormal, "Normal"},
    {MediaStatus::kNotReady, "Not Ready"},
    {MediaStatus::kWritePersistencyLost, "Write Persistency Lost"},
    {MediaStatus::kAllDataLost, "All Data Lost"},
    {MediaStatus::kWritePersistencyLossOnPowerLoss,
     "Write Persistency Loss in the Event of Power Loss"},
    {MediaStatus::kWritePersistencyLossOnShutdown, "Write Persistency Loss in Event of Shutdown"},
    {MediaStatus::kWritePersistencyLossImminent, "Write Persistency Loss Imminent"},
    {MediaStatus::kAllDataLossOnPowerLoss, "All Data Loss in Event of Power Loss"},
    {MediaStatus::kAllDataLossOnShutdown, "All Data loss in the Event of Shutdown"},
    {MediaStatus::kAllDataLossImminent, "All Data Loss Imminent"},
};
constexpr EnumTable kMediaStatuses(kMediaStatusNames, "Reserved");

// Additional-status sub-field values (2 bits; 3 is reserved).
constexpr EnumName<uint8_t> kAdditionalStatusNames[] = {
    {0, "Normal"},
    {1, "Warning"},
    {2, "Critical"},
};
constexpr EnumTable kAdditionalStatuses(kAdditionalStatusNames, "Reserved");

static_assert(kRecordKinds.Valid() && kSeverities.Valid() && kGmerEventTypes.Valid() &&
              kDramEventTypes.Valid() && kTransactionTypes.Valid() && kMemEventSubTypes.Valid() &&
              kMemModuleEventTypes.Valid() && kMemModuleEventSubTypes.Valid() &&
              kMediaStatuses.Valid() && kAdditionalStatuses.Valid());

}  // namespace

std::string_view RecordKindName(RecordKind kind) { return kRecordKinds.Name(kind); }
std::string_view SeverityName(Severity severity) { return kSeverities.Name(severity); }

bool IsKnown(GmerEventType v) { return kGmerEventTypes.IsKnown(v); }
bool IsKnown(DramEventType v) { return kDramEventTypes.IsKnown(v); }
bool IsKnown(TransactionType v) { return kTransactionTypes.IsKnown(v); }
bool IsKnown(MemEventSubType v) { return kMemEventSubTypes.IsKnown(v); }
bool IsKnown(MemModuleEventType v) { return kMemModuleEventTypes.IsKnown(v); }
bool IsKnown(MemModuleEventSubType v) { return kMemModuleEventSubTypes.IsKnown(v); }
bool IsKnown(MediaStatus v) { return kMediaStatuses.IsKnown(v); }

std::string_view GmerEventTypeName(GmerEventType v) { return kGmerEventTypes.Name(v); }
std::string_view DramEventTypeName(DramEventType v) { return kDramEventTypes.Name(v); }
std::string_view TransactionTypeName(TransactionType v) { return kTransactionTypes.Name(v); }
std::string_view MemEventSubTypeName(MemEventSubType v) { return kMemEventSubTypes.Name(v); }
std::string_view MemModuleEventTypeName(MemModuleEventType v) {
  return kMemModuleEventTypes.Name(v);
}
std::string_view MemModuleEventSubTypeName(MemModuleEventSubType v) {
  return kMemModuleEventSubTypes.Name(v);
}
std::string_view MediaStatusName(MediaStatus v) { return kMediaStatuses.Name(v); }
std::string_view AdditionalStatusName(uint8_t v) { return kAdditionalStatuses.Name(v); }

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
