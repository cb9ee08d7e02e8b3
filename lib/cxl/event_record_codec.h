// CXL memory-device event records: the record types and the byte-exact codec for the 128-byte
// records that Get Event Records (0100h) returns. Names are in event_record_names.h, the JSON
// rendering in event_record_json.h.
//
// Layouts (CXL r3.1 8.2.9.2.1, as laid out by the Linux kernel and QEMU): all integers are
// little-endian; the 16-byte record-type UUID at offset 0 is in network (RFC 4122) byte order.
// Common header at 0x10-0x2F, event-specific data at 0x30-0x7F. General Media, DRAM and
// Memory Module records are decoded field by field; every other record type (switch, MLD
// port, memory sparing, dynamic capacity, unknown UUIDs) is a GenericRecord holding the 80 raw
// data bytes. Reserved bytes are kept raw, so EncodeRecord(DecodeRecord(b)) == b for every
// image DecodeRecord accepts.
#ifndef ECD_LIB_CXL_EVENT_RECORD_CODEC_H_
#define ECD_LIB_CXL_EVENT_RECORD_CODEC_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ecd::cxl {

// Record geometry.
inline constexpr size_t kRecordSize = 0x80;
inline constexpr uint8_t kRecordLength = 0x80;  // the only accepted Event Record Length
inline constexpr size_t kRecordDataOffset = 0x30;
inline constexpr size_t kRecordDataSize = 0x50;  // CXL_EVENT_RECORD_DATA_LENGTH

// Common Event Record header offsets (absolute within the record) and field sizes.
inline constexpr size_t kHeaderUuidOffset = 0x00;    // 16 bytes, network byte order
inline constexpr size_t kHeaderLengthOffset = 0x10;  // u8
inline constexpr size_t kHeaderFlagsOffset = 0x11;   // LE24
inline constexpr size_t kHeaderFlagsSize = 3;
inline constexpr size_t kHeaderHandleOffset = 0x14;           // LE16
inline constexpr size_t kHeaderRelatedHandleOffset = 0x16;    // LE16
inline constexpr size_t kHeaderTimestampOffset = 0x18;        // LE64, ns since the Unix epoch
inline constexpr size_t kHeaderMaintOpClassOffset = 0x20;     // u8
inline constexpr size_t kHeaderMaintOpSubClassOffset = 0x21;  // u8 (r3.1)
inline constexpr size_t kHeaderLdIdOffset = 0x22;             // LE16 (r3.2)
inline constexpr size_t kHeaderHeadIdOffset = 0x24;           // u8 (r3.2)
inline constexpr size_t kHeaderReservedOffset = 0x25;
inline constexpr size_t kHeaderReservedSize = 11;

// Event Record Flags (24 bits). Bits 1:0 are the severity.
inline constexpr uint32_t kFlagSeverityMask = 0x3;
inline constexpr uint32_t kFlagPermanentCondition = 1u << 2;
inline constexpr uint32_t kFlagMaintenanceNeeded = 1u << 3;
inline constexpr uint32_t kFlagPerformanceDegraded = 1u << 4;
inline constexpr uint32_t kFlagHardwareReplacementNeeded = 1u << 5;
inline constexpr uint32_t kFlagMaintOpSubClassValid = 1u << 6;  // r3.1
inline constexpr uint32_t kFlagLdIdValid = 1u << 7;             // r3.2
inline constexpr uint32_t kFlagHeadIdValid = 1u << 8;           // r3.2
inline constexpr uint32_t kFlagsDefinedMask = 0x1FF;
inline constexpr uint32_t kFlagsMask = 0xFFFFFF;

// A UUID as its 16 bytes in network byte order (no EFI GUID mixed-endian swapping).
struct Uuid {
  std::array<uint8_t, 16> bytes{};

  // Canonical lower-case form, e.g. "fbcd0a77-c260-417f-85a9-088b1621eba6".
  std::string ToString() const;
  // Accepts the canonical 8-4-4-4-12 hex form in either case; InvalidArgument otherwise.
  static absl::StatusOr<Uuid> Parse(std::string_view text);
  friend bool operator==(const Uuid&, const Uuid&) = default;
};

// Record-type UUIDs (CXL r3.1 8.2.9.2.1, kernel cxlmem.h).
inline constexpr Uuid kGeneralMediaUuid = {{0xfb, 0xcd, 0x0a, 0x77, 0xc2, 0x60, 0x41, 0x7f, 0x85,
                                            0xa9, 0x08, 0x8b, 0x16, 0x21, 0xeb, 0xa6}};
inline constexpr Uuid kDramUuid = {{0x60, 0x1d, 0xcb, 0xb3, 0x9c, 0x06, 0x4e, 0xab, 0xb8, 0xaf,
                                    0x4e, 0x9b, 0xfb, 0x5c, 0x96, 0x24}};
inline constexpr Uuid kMemoryModuleUuid = {{0xfe, 0x92, 0x74, 0x75, 0xdd, 0x59, 0x43, 0x39, 0xa5,
                                            0x86, 0x79, 0xba, 0xb1, 0x13, 0xb7, 0x74}};
// r3.2.
inline constexpr Uuid kMemorySparingUuid = {{0xe7, 0x1f, 0x3a, 0x40, 0x2d, 0x29, 0x40, 0x92, 0x8a,
                                             0x39, 0x4d, 0x1c, 0x96, 0x6c, 0x7c, 0x65}};
inline constexpr Uuid kDynamicCapacityUuid = {{0xca, 0x95, 0xaf, 0xa7, 0xf1, 0x83, 0x40, 0x18, 0x8c,
                                               0x2f, 0x95, 0x26, 0x8e, 0x10, 0x1a, 0x2a}};
// Fabric-manager and switch records.
inline constexpr Uuid kPhysicalSwitchUuid = {{0x77, 0xcf, 0x92, 0x71, 0x9c, 0x02, 0x47, 0x0b, 0x9f,
                                              0xe4, 0xbc, 0x7b, 0x75, 0xf2, 0xda, 0x97}};
inline constexpr Uuid kVirtualSwitchUuid = {{0x40, 0xd2, 0x64, 0x25, 0x33, 0x96, 0x4c, 0x4d, 0xa5,
                                             0xda, 0x3d, 0x47, 0x26, 0x3a, 0xf4, 0x25}};
inline constexpr Uuid kMldPortUuid = {{0x8d, 0xc4, 0x43, 0x63, 0x0c, 0x96, 0x47, 0x10, 0xb7, 0xbf,
                                       0x04, 0xbb, 0x99, 0x53, 0x4c, 0x3f}};

enum class RecordKind : uint8_t {
  kGeneralMedia,
  kDram,
  kMemoryModule,
  kMemorySparing,
  kDynamicCapacity,
  kPhysicalSwitch,
  kVirtualSwitch,
  kMldPort,
  kUnknown,
};

// The kind a record-type UUID names; kUnknown for any other UUID.
RecordKind KindFromUuid(const Uuid& uuid);

// Event Record Flags bits 1:0. All four encodings are defined.
enum class Severity : uint8_t { kInformational = 0, kWarning = 1, kFailure = 2, kFatal = 3 };

// Common Event Record header: bytes 0x10-0x2F (the UUID is kept by the record that owns it).
struct EventHeader {
  uint8_t length = kRecordLength;
  uint32_t flags = 0;  // 24 bits; EncodeRecord writes only bits 23:0
  uint16_t handle = 0;
  uint16_t related_handle = 0;     // 0 = none
  uint64_t timestamp = 0;          // ns since the Unix epoch; 0 = none
  uint8_t maint_op_class = 0;      // 0 = no maintenance operation requested
  uint8_t maint_op_sub_class = 0;  // meaningful iff maint_op_sub_class_valid()
  uint16_t ld_id = 0;              // r3.2; meaningful iff ld_id_valid()
  uint8_t head_id = 0;             // r3.2; meaningful iff head_id_valid()
  std::array<uint8_t, kHeaderReservedSize> reserved{};

  Severity severity() const { return static_cast<Severity>(flags & kFlagSeverityMask); }
  void set_severity(Severity s) { flags = (flags & ~kFlagSeverityMask) | static_cast<uint32_t>(s); }
  bool permanent_condition() const { return (flags & kFlagPermanentCondition) != 0; }
  bool maintenance_needed() const { return (flags & kFlagMaintenanceNeeded) != 0; }
  bool performance_degraded() const { return (flags & kFlagPerformanceDegraded) != 0; }
  bool hardware_replacement_needed() const { return (flags & kFlagHardwareReplacementNeeded) != 0; }
  bool maint_op_sub_class_valid() const { return (flags & kFlagMaintOpSubClassValid) != 0; }
  bool ld_id_valid() const { return (flags & kFlagLdIdValid) != 0; }
  bool head_id_valid() const { return (flags & kFlagHeadIdValid) != 0; }
  // Flag bits 23:9, reserved in r3.2.
  uint32_t reserved_flags() const { return flags & kFlagsMask & ~kFlagsDefinedMask; }
  friend bool operator==(const EventHeader&, const EventHeader&) = default;
};

// Physical Address low bits (GMER and DER); the DPA itself is bits 63:6.
inline constexpr uint64_t kDpaMask = ~uint64_t{0x3F};
inline constexpr uint64_t kDpaVolatile = 1u << 0;
inline constexpr uint64_t kDpaNotRepairable = 1u << 1;  // r3.1
inline constexpr uint64_t kDpaFlagsMask = 0x3;          // what the kernel reports as dpa_flags

// Memory Event Descriptor bits (GMER and DER).
inline constexpr uint8_t kDescriptorUncorrectable = 1u << 0;
inline constexpr uint8_t kDescriptorThreshold = 1u << 1;
inline constexpr uint8_t kDescriptorPoisonListOverflow = 1u << 2;

// Advanced Programmable CME Threshold Event Flags (GMER and DER, r3.1).
inline constexpr uint8_t kCmeMultipleMedia = 1u << 0;
inline constexpr uint8_t kCmeThresholdExceeded = 1u << 1;

// Enumerated fields are stored as their raw byte; a value outside the named ones is reserved,
// decodes without error, and is reported by IsKnown() == false and RecordWarnings()
// (event_record_names.h).

// General Media Memory Event Type.
enum class GmerEventType : uint8_t {
  kEccError = 0,
  kInvalidAddress = 1,
  kDataPathError = 2,
  kTeStateViolation = 3,             // r3.1
  kScrubMediaEccError = 4,           // r3.1
  kAdvProgCmeCounterExpiration = 5,  // r3.1
  kCkidViolation = 6,                // r3.1
};

// DRAM Memory Event Type (numbered differently from the General Media one).
enum class DramEventType : uint8_t {
  kEccError = 0,
  kScrubMediaEccError = 1,
  kInvalidAddress = 2,
  kDataPathError = 3,
  kTeStateViolation = 4,
  kAdvProgCmeCounterExpiration = 5,
  kCkidViolation = 6,
};

// Transaction Type (GMER and DER).
enum class TransactionType : uint8_t {
  kUnknown = 0,
  kHostRead = 1,
  kHostWrite = 2,
  kHostScanMedia = 3,
  kHostInjectPoison = 4,
  kInternalMediaScrub = 5,
  kInternalMediaManagement = 6,
  kInternalMediaErrorCheckScrub = 7,  // r3.1
  kMediaInitialization = 8,           // r3.1
};

// Memory Event Sub-Type (GMER and DER, r3.1).
enum class MemEventSubType : uint8_t {
  kNotReported = 0,
  kInternalDatapathError = 1,
  kMediaLinkCommandTrainingError = 2,
  kMediaLinkControlTrainingError = 3,
  kMediaLinkDataTrainingError = 4,
  kMediaLinkCrcError = 5,
};

// Memory Module Device Event Type.
enum class MemModuleEventType : uint8_t {
  kHealthStatusChange = 0,
  kMediaStatusChange = 1,
  kLifeUsedChange = 2,
  kTemperatureChange = 3,
  kDataPathError = 4,
  kLsaError = 5,
  kUnrecoverableSidebandBusError = 6,  // r3.1
  kMemoryMediaFruError = 7,            // r3.1
  kPowerManagementFault = 8,           // r3.1
};

// Memory Module Device Event Sub-Type (r3.1).
enum class MemModuleEventSubType : uint8_t {
  kNotReported = 0,
  kInvalidConfigData = 1,
  kUnsupportedConfigData = 2,
  kUnsupportedMemoryMediaFru = 3,
};

// Device Health Information media status.
enum class MediaStatus : uint8_t {
  kNormal = 0,
  kNotReady = 1,
  kWritePersistencyLost = 2,
  kAllDataLost = 3,
  kWritePersistencyLossOnPowerLoss = 4,
  kWritePersistencyLossOnShutdown = 5,
  kWritePersistencyLossImminent = 6,
  kAllDataLossOnPowerLoss = 7,
  kAllDataLossOnShutdown = 8,
  kAllDataLossImminent = 9,
};

// Component Identifier in PLDM format (r3.1 Table 8-44).
struct PldmComponentId {
  bool entity_id_valid = false;          // byte 0 bit 0
  bool resource_id_valid = false;        // byte 0 bit 1
  std::array<uint8_t, 6> entity_id{};    // bytes 1-6
  std::array<uint8_t, 4> resource_id{};  // bytes 7-10
  friend bool operator==(const PldmComponentId&, const PldmComponentId&) = default;
};
PldmComponentId ParsePldmComponentId(const std::array<uint8_t, 16>& component_id);

// General Media Event Record validity flag bits.
inline constexpr uint16_t kGmerValidChannel = 1u << 0;
inline constexpr uint16_t kGmerValidRank = 1u << 1;
inline constexpr uint16_t kGmerValidDevice = 1u << 2;
inline constexpr uint16_t kGmerValidComponent = 1u << 3;
inline constexpr uint16_t kGmerValidComponentIdFormat = 1u << 4;  // r3.1: PLDM format

// General Media Event Record (r3.1 Table 8-45). Optional fields are kept raw whatever the
// validity flags say; has_*() tells whether the device declared them meaningful.
struct GeneralMediaRecord {
  EventHeader header;
  uint64_t physical_address = 0;                  // 0x30: DPA in bits 63:6, flags in bits 5:0
  uint8_t descriptor = 0;                         // 0x38
  GmerEventType type = GmerEventType::kEccError;  // 0x39
  TransactionType transaction_type = TransactionType::kUnknown;  // 0x3A
  uint16_t validity_flags = 0;                                   // 0x3B
  uint8_t channel = 0;                                           // 0x3D
  uint8_t rank = 0;                                              // 0x3E
  uint32_t device = 0;                                           // 0x3F, 24 bits
  std::array<uint8_t, 16> component_id{};                        // 0x42
  uint8_t cme_threshold_ev_flags = 0;                            // 0x52 (r3.1)
  uint32_t cme_count = 0;                                        // 0x53, 24 bits (r3.1)
  MemEventSubType sub_type = MemEventSubType::kNotReported;      // 0x56 (r3.1)
  std::array<uint8_t, 41> reserved{};                            // 0x57

  uint64_t dpa() const { return physical_address & kDpaMask; }
  uint8_t dpa_flags() const { return static_cast<uint8_t>(physical_address & kDpaFlagsMask); }
  bool is_volatile() const { return (physical_address & kDpaVolatile) != 0; }
  bool not_repairable() const { return (physical_address & kDpaNotRepairable) != 0; }
  bool has_channel() const { return (validity_flags & kGmerValidChannel) != 0; }
  bool has_rank() const { return (validity_flags & kGmerValidRank) != 0; }
  bool has_device() const { return (validity_flags & kGmerValidDevice) != 0; }
  bool has_component_id() const { return (validity_flags & kGmerValidComponent) != 0; }
  // The PLDM interpretation of component_id, present iff COMPONENT and FORMAT are both valid.
  std::optional<PldmComponentId> pldm_component_id() const;
  friend bool operator==(const GeneralMediaRecord&, const GeneralMediaRecord&) = default;
};

// DRAM Event Record validity flag bits.
inline constexpr uint16_t kDramValidChannel = 1u << 0;
inline constexpr uint16_t kDramValidRank = 1u << 1;
inline constexpr uint16_t kDramValidNibbleMask = 1u << 2;
inline constexpr uint16_t kDramValidBankGroup = 1u << 3;
inline constexpr uint16_t kDramValidBank = 1u << 4;
inline constexpr uint16_t kDramValidRow = 1u << 5;
inline constexpr uint16_t kDramValidColumn = 1u << 6;
inline constexpr uint16_t kDramValidCorrectionMask = 1u << 7;
inline constexpr uint16_t kDramValidComponent = 1u << 8;          // r3.1
inline constexpr uint16_t kDramValidComponentIdFormat = 1u << 9;  // r3.1
inline constexpr uint16_t kDramValidSubChannel = 1u << 10;        // r3.1

// DRAM Event Record (r3.1 Table 8-46).
struct DramRecord {
  EventHeader header;
  uint64_t physical_address = 0;                                 // 0x30
  uint8_t descriptor = 0;                                        // 0x38
  DramEventType type = DramEventType::kEccError;                 // 0x39
  TransactionType transaction_type = TransactionType::kUnknown;  // 0x3A
  uint16_t validity_flags = 0;                                   // 0x3B
  uint8_t channel = 0;                                           // 0x3D
  uint8_t rank = 0;                                              // 0x3E
  uint32_t nibble_mask = 0;                                      // 0x3F, 24 bits
  uint8_t bank_group = 0;                                        // 0x42
  uint8_t bank = 0;                                              // 0x43
  uint32_t row = 0;                                              // 0x44, 24 bits
  uint16_t column = 0;                                           // 0x47
  std::array<uint8_t, 32> correction_mask{};                     // 0x49
  std::array<uint8_t, 16> component_id{};                        // 0x69 (r3.1)
  uint8_t sub_channel = 0;                                       // 0x79 (r3.1)
  uint8_t cme_threshold_ev_flags = 0;                            // 0x7A (r3.1)
  uint32_t cvme_count = 0;                                       // 0x7B, 24 bits (r3.1)
  MemEventSubType sub_type = MemEventSubType::kNotReported;      // 0x7E (r3.1)
  uint8_t reserved = 0;                                          // 0x7F

  uint64_t dpa() const { return physical_address & kDpaMask; }
  uint8_t dpa_flags() const { return static_cast<uint8_t>(physical_address & kDpaFlagsMask); }
  bool is_volatile() const { return (physical_address & kDpaVolatile) != 0; }
  bool not_repairable() const { return (physical_address & kDpaNotRepairable) != 0; }
  // Correction mask as four LE64 words (the QEMU view). REQUIRES: 0 <= i < 4.
  uint64_t correction_mask_word(int i) const;
  bool has_channel() const { return (validity_flags & kDramValidChannel) != 0; }
  bool has_rank() const { return (validity_flags & kDramValidRank) != 0; }
  bool has_nibble_mask() const { return (validity_flags & kDramValidNibbleMask) != 0; }
  bool has_bank_group() const { return (validity_flags & kDramValidBankGroup) != 0; }
  bool has_bank() const { return (validity_flags & kDramValidBank) != 0; }
  bool has_row() const { return (validity_flags & kDramValidRow) != 0; }
  bool has_column() const { return (validity_flags & kDramValidColumn) != 0; }
  bool has_correction_mask() const { return (validity_flags & kDramValidCorrectionMask) != 0; }
  bool has_component_id() const { return (validity_flags & kDramValidComponent) != 0; }
  bool has_sub_channel() const { return (validity_flags & kDramValidSubChannel) != 0; }
  std::optional<PldmComponentId> pldm_component_id() const;
  friend bool operator==(const DramRecord&, const DramRecord&) = default;
};

// Device health information bits.
inline constexpr uint8_t kHealthMaintenanceNeeded = 1u << 0;
inline constexpr uint8_t kHealthPerformanceDegraded = 1u << 1;
inline constexpr uint8_t kHealthReplacementNeeded = 1u << 2;
inline constexpr uint8_t kHealthMemCapacityDegraded = 1u << 3;

// Device Health Information as embedded in the Memory Module record at 0x31-0x42 (the
// 18-byte Get Health Info output).
struct DeviceHealth {
  uint8_t health_status = 0;                        // 0x31: kHealth* bits
  MediaStatus media_status = MediaStatus::kNormal;  // 0x32
  uint8_t additional_status = 0;                    // 0x33
  uint8_t life_used = 0;                            // 0x34: percent
  int16_t device_temp = 0;                          // 0x35: degrees Celsius
  uint32_t dirty_shutdown_count = 0;                // 0x37
  uint32_t corrected_volatile_error_count = 0;      // 0x3B
  uint32_t corrected_persistent_error_count = 0;    // 0x3F

  // Additional status sub-fields (see AdditionalStatusName).
  uint8_t life_used_status() const { return additional_status & 0x3; }
  uint8_t device_temp_status() const { return (additional_status >> 2) & 0x3; }
  uint8_t cor_vol_err_status() const { return (additional_status >> 4) & 0x1; }
  uint8_t cor_per_err_status() const { return (additional_status >> 5) & 0x1; }
  friend bool operator==(const DeviceHealth&, const DeviceHealth&) = default;
};

// Memory Module Event Record validity flag bits (r3.1).
inline constexpr uint16_t kMemModuleValidComponent = 1u << 0;
inline constexpr uint16_t kMemModuleValidComponentIdFormat = 1u << 1;

// Memory Module Event Record (r3.1 Table 8-47).
struct MemoryModuleRecord {
  EventHeader header;
  MemModuleEventType event_type = MemModuleEventType::kHealthStatusChange;     // 0x30
  DeviceHealth health;                                                         // 0x31-0x42
  uint16_t validity_flags = 0;                                                 // 0x43 (r3.1)
  std::array<uint8_t, 16> component_id{};                                      // 0x45 (r3.1)
  MemModuleEventSubType event_sub_type = MemModuleEventSubType::kNotReported;  // 0x55 (r3.1)
  std::array<uint8_t, 42> reserved{};                                          // 0x56

  bool has_component_id() const { return (validity_flags & kMemModuleValidComponent) != 0; }
  std::optional<PldmComponentId> pldm_component_id() const;
  friend bool operator==(const MemoryModuleRecord&, const MemoryModuleRecord&) = default;
};

// Any other record type: the header and the 80 opaque data bytes. `kind` is what DecodeRecord
// derived from `uuid`; EncodeRecord writes `uuid` and ignores `kind`.
struct GenericRecord {
  RecordKind kind = RecordKind::kUnknown;
  Uuid uuid;
  EventHeader header;
  std::array<uint8_t, kRecordDataSize> data{};
  friend bool operator==(const GenericRecord&, const GenericRecord&) = default;
};

using EventRecord = std::variant<GeneralMediaRecord, DramRecord, MemoryModuleRecord, GenericRecord>;

// Decodes the record in bytes[0, 128); bytes past 128 are ignored and never read.
// InvalidArgument if bytes.size() < 128 (the message names the size) or the Event Record Length
// byte is not 0x80. Reserved enum values and reserved bits do not fail the decode: they are kept
// raw and listed by RecordWarnings().
absl::StatusOr<EventRecord> DecodeRecord(absl::Span<const uint8_t> bytes);

// The 128-byte wire image: UUID from the record kind (or GenericRecord::uuid), every field at
// its offset, reserved bytes as stored. Values wider than their wire field (24-bit fields,
// flags) are truncated to the field.
std::array<uint8_t, kRecordSize> EncodeRecord(const EventRecord& record);

// Accessors over the variant.
const EventHeader& HeaderOf(const EventRecord& record);
EventHeader& MutableHeaderOf(EventRecord& record);
RecordKind KindOf(const EventRecord& record);
Uuid UuidOf(const EventRecord& record);

}  // namespace ecd::cxl

#endif  // ECD_LIB_CXL_EVENT_RECORD_CODEC_H_
