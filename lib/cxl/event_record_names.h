// Names for CXL event record values as the Linux cxl tracepoints print them, flag sets rendered
// like the kernel's __print_flags, and the warnings for values that have no name.
#ifndef ECD_LIB_CXL_EVENT_RECORD_NAMES_H_
#define ECD_LIB_CXL_EVENT_RECORD_NAMES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cxl/event_record_codec.h"

namespace ecd::cxl {

// "General Media", "DRAM", ..., "MLD Port"; "Unknown" for RecordKind::kUnknown.
std::string_view RecordKindName(RecordKind kind);

// "Informational", "Warning", "Failure", "Fatal" (the kernel's log-type names); "Reserved" for a
// value outside Severity.
std::string_view SeverityName(Severity severity);

// True iff the value is one the specification names. Each enum has one (value, name) table,
// so IsKnown(v) holds exactly when the matching *Name(v) below is not "Reserved".
bool IsKnown(GmerEventType v);
bool IsKnown(DramEventType v);
bool IsKnown(TransactionType v);
bool IsKnown(MemEventSubType v);
bool IsKnown(MemModuleEventType v);
bool IsKnown(MemModuleEventSubType v);
bool IsKnown(MediaStatus v);

// Names exactly as the kernel's cxl_general_media / cxl_dram / cxl_memory_module tracepoints
// print them (e.g. "ECC Error", "Host Read", "All Data loss in the Event of Shutdown");
// "Reserved" for a value IsKnown() rejects.
std::string_view GmerEventTypeName(GmerEventType v);
std::string_view DramEventTypeName(DramEventType v);
std::string_view TransactionTypeName(TransactionType v);
std::string_view MemEventSubTypeName(MemEventSubType v);
std::string_view MemModuleEventTypeName(MemModuleEventType v);
std::string_view MemModuleEventSubTypeName(MemModuleEventSubType v);
std::string_view MediaStatusName(MediaStatus v);
// Additional-status sub-fields: 0 "Normal", 1 "Warning", 2 "Critical"; "Reserved" otherwise.
std::string_view AdditionalStatusName(uint8_t v);

// Flag sets rendered like the kernel's __print_flags: the names of the set bits joined by the
// delimiter, then any bits without a name as "0x%x"; "" for 0. The header flags include the
// severity bits, which the kernel has no names for (a Warning record with no other flags
// prints "0x1").
std::string HeaderFlagsString(uint32_t flags);           // " | "-joined, e.g. "MAINTENANCE_NEEDED"
std::string DpaFlagsString(uint8_t dpa_flags);           // "VOLATILE|NOT_REPAIRABLE"
std::string DescriptorString(uint8_t descriptor);        // "UNCORRECTABLE_EVENT|THRESHOLD_EVENT"
std::string GmerValidityString(uint16_t validity);       // "CHANNEL|RANK|DEVICE|COMPONENT|..."
std::string DramValidityString(uint16_t validity);       // "CHANNEL|...|SUB CHANNEL"
std::string MemModuleValidityString(uint16_t validity);  // "COMPONENT|COMPONENT PLDM FORMAT"
std::string HealthStatusString(uint8_t health_status);   // "MAINTENANCE_NEEDED|..."
std::string CmeThresholdFlagsString(uint8_t flags);

// Human-readable notes about values a well-formed record should not carry, for the caller to
// log: reserved enum codes, reserved header flag bits, an unknown record UUID. Empty for a
// clean record.
std::vector<std::string> RecordWarnings(const EventRecord& record);

}  // namespace ecd::cxl

#endif  // ECD_LIB_CXL_EVENT_RECORD_NAMES_H_
