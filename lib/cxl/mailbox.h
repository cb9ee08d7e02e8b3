// CXL Events command set (01h) mailbox payloads: the byte images of Get Event Records (0100h),
// Clear Event Records (0101h) and Get/Set Event Interrupt Policy (0102h/0103h), the event log
// identifiers, and the mailbox return codes. All multi-byte fields are little-endian. Layouts
// follow the CXL specification's Events command set as Linux (drivers/cxl/cxlmem.h) and QEMU
// (hw/cxl/cxl-events.c, cxl-mailbox-utils.c) implement it; the two agree.
//
// Get Event Records input: 00h Event Log (1).
// Get Event Records output: 00h Flags (bit0 Overflow, bit1 More Event Records); 01h reserved;
//   02h Overflow Error Count (2); 04h First Overflow Timestamp (8); 0Ch Last Overflow Timestamp
//   (8); 14h Event Record Count (2); 16h reserved (10); 20h records, 128 bytes each.
// Clear Event Records input: 00h Event Log (1); 01h Flags (bit0 Clear All Events); 02h Number of
//   Handles n (1); 03h reserved (3); 06h handles (2 each). Length = 6 + 2n.
// Event Interrupt Policy: one settings byte per log in the order Informational, Warning, Failure,
//   Fatal, then an optional fifth byte for the Dynamic Capacity log (CXL 3.x). Each byte: bits
//   1:0 interrupt mode, bits 3:2 reserved, bits 7:4 interrupt message number.
//
// Decode errors follow one convention so that a device can map them to return codes with
// ReturnCodeForDecodeError(): OutOfRange when the payload length is wrong (Invalid Payload
// Length), InvalidArgument when a field holds a value the command does not allow (Invalid
// Input). Decoders never read past the end of the span they are given. Reserved bits and bytes
// are written as zero and ignored when decoding.
//
// Thread safety: everything here is a value type or a pure function.
#ifndef ECD_LIB_CXL_MAILBOX_H_
#define ECD_LIB_CXL_MAILBOX_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ecd::cxl {

// Events command set opcodes (command set 01h, commands 00h..03h).
inline constexpr uint16_t kOpGetEventRecords = 0x0100;
inline constexpr uint16_t kOpClearEventRecords = 0x0101;
inline constexpr uint16_t kOpGetEventInterruptPolicy = 0x0102;
inline constexpr uint16_t kOpSetEventInterruptPolicy = 0x0103;

// Every event record, common header included, is 128 bytes.
inline constexpr size_t kEventRecordSize = 0x80;
using RawEventRecord = std::array<uint8_t, kEventRecordSize>;

// The Event Log byte of Get/Clear Event Records, and the bit of that log in the Event Status
// register.
enum class EventLog : uint8_t {
  kInformational = 0,
  kWarning = 1,
  kFailure = 2,
  kFatal = 3,
  kDynamicCapacity = 4,  // CXL 3.x; the emulated device (event_log.h) does not implement it
};
// The number of logs defined by the specification (0..4).
inline constexpr int kNumDefinedEventLogs = 5;

// True if `value` names a log the specification defines (0..4).
bool IsDefinedEventLog(uint8_t value);
// "Informational", "Warning", "Failure", "Fatal", "Dynamic Capacity"; "Unknown" otherwise.
std::string_view EventLogName(EventLog log);

// Mailbox return codes (CXL r3.1 Table 8-34; kernel CMD_CMD_RC_TABLE, QEMU CXLRetCode).
enum class ReturnCode : uint16_t {
  kSuccess = 0x00,
  kBackgroundCommandStarted = 0x01,
  kInvalidInput = 0x02,
  kUnsupported = 0x03,
  kInternalError = 0x04,
  kRetryRequired = 0x05,
  kBusy = 0x06,
  kMediaDisabled = 0x07,
  kFwTransferInProgress = 0x08,
  kFwTransferOutOfOrder = 0x09,
  kFwAuthenticationFailed = 0x0A,
  kInvalidSlot = 0x0B,
  kActivationFailedFwRolledBack = 0x0C,
  kActivationFailedColdResetRequired = 0x0D,
  kInvalidHandle = 0x0E,
  kInvalidPhysicalAddress = 0x0F,
  kInjectPoisonLimitReached = 0x10,
  kPermanentMediaFailure = 0x11,
  kAborted = 0x12,
  kInvalidSecurityState = 0x13,
  kIncorrectPassphrase = 0x14,
  kUnsupportedMailboxOrCci = 0x15,
  kInvalidPayloadLength = 0x16,
  kInvalidLog = 0x17,
  kInterrupted = 0x18,
  kUnsupportedFeatureVersion = 0x19,
  kUnsupportedFeatureSelectionValue = 0x1A,
  kFeatureTransferInProgress = 0x1B,
  kFeatureTransferOutOfOrder = 0x1C,
  kResourcesExhausted = 0x1D,
  kInvalidExtentList = 0x1E,
  kTransferOutOfOrder = 0x1F,
  kRequestAbortNotSupported = 0x20,
};

// The specification's name of a return code, e.g. "Invalid Handle"; "Unknown" for values outside
// 0x00..0x20.
std::string_view ReturnCodeName(ReturnCode rc);

// Maps a decode error of this file onto the return code a device answers with: OK -> Success,
// OutOfRange -> Invalid Payload Length, InvalidArgument -> Invalid Input, anything else ->
// Internal Error.
ReturnCode ReturnCodeForDecodeError(const absl::Status& status);

// The result of one mailbox command: the return code (STATUS register bits 47:32) and the output
// payload, which is empty unless rc is Success.
struct MailboxResponse {
  ReturnCode rc = ReturnCode::kSuccess;
  std::vector<uint8_t> output;
};

// Get Event Records (0100h) input payload: exactly one byte.
struct GetEventRecordsInput {
  EventLog log = EventLog::kInformational;

  std::vector<uint8_t> Encode() const;
  // OutOfRange unless payload.size() == 1; InvalidArgument if the byte is not a defined log.
  static absl::StatusOr<GetEventRecordsInput> Decode(absl::Span<const uint8_t> payload);
  friend bool operator==(const GetEventRecordsInput&, const GetEventRecordsInput&) = default;
};

// Get Event Records (0100h) output payload.
struct GetEventRecordsOutput {
  static constexpr size_t kHeaderSize = 0x20;  // records start here
  static constexpr uint8_t kFlagOverflow = 0x01;
  static constexpr uint8_t kFlagMoreRecords = 0x02;

  bool overflow = false;
  bool more_records = false;
  uint16_t overflow_count = 0;
  uint64_t first_overflow_ts = 0;
  uint64_t last_overflow_ts = 0;
  std::vector<RawEventRecord> records;

  // Returns kHeaderSize + 128 * records.size() bytes; the record count field is records.size().
  // REQUIRES: records.size() <= 0xFFFF.
  std::vector<uint8_t> Encode() const;
  // OutOfRange if the payload is shorter than kHeaderSize + 128 * (record count field). Bytes
  // after the last record are ignored (a host may pass its whole payload buffer).
  static absl::StatusOr<GetEventRecordsOutput> Decode(absl::Span<const uint8_t> payload);
  friend bool operator==(const GetEventRecordsOutput&, const GetEventRecordsOutput&) = default;
};

// Clear Event Records (0101h) input payload.
struct ClearEventRecordsInput {
  static constexpr size_t kHeaderSize = 0x06;  // handles start here
  static constexpr uint8_t kFlagClearAll = 0x01;
  static constexpr size_t kMaxHandles = 0xFF;  // Number of Event Record Handles is one byte

  EventLog log = EventLog::kInformational;
  bool clear_all = false;
  std::vector<uint16_t> handles;  // in the order the host lists them

  // Returns kHeaderSize + 2 * handles.size() bytes. REQUIRES: handles.size() <= kMaxHandles.
  std::vector<uint8_t> Encode() const;
  // OutOfRange if payload.size() < 6 or != 6 + 2 * (Number of Handles); InvalidArgument if the
  // Event Log byte is not a defined log.
  static absl::StatusOr<ClearEventRecordsInput> Decode(absl::Span<const uint8_t> payload);
  friend bool operator==(const ClearEventRecordsInput&, const ClearEventRecordsInput&) = default;
};

// Interrupt Mode, bits 1:0 of an interrupt settings byte.
enum class InterruptMode : uint8_t {
  kNone = 0,         // 00b: no interrupt
  kMsi = 1,          // 01b: MSI/MSI-X
  kFwInterrupt = 2,  // 10b: firmware interrupt (EFN VDM)
  kReserved = 3,     // 11b: reserved; never valid in a payload
};

// One log's interrupt settings byte.
struct InterruptSetting {
  static constexpr uint8_t kModeMask = 0x03;   // bits 1:0
  static constexpr uint8_t kMessageShift = 4;  // bits 7:4
  static constexpr uint8_t kMaxMessageNumber = 0x0F;

  InterruptMode mode = InterruptMode::kNone;
  uint8_t message_number = 0;  // 4 bits

  // (message_number << 4) | mode, reserved bits 3:2 zero.
  // REQUIRES: mode != kReserved, message_number <= 15.
  uint8_t Encode() const;
  // InvalidArgument if the mode bits are 11b. Bits 3:2 are ignored.
  static absl::StatusOr<InterruptSetting> Decode(uint8_t byte);
  friend bool operator==(const InterruptSetting&, const InterruptSetting&) = default;
};

// Get Event Interrupt Policy (0102h) output / Set Event Interrupt Policy (0103h) input.
struct EventInterruptPolicy {
  static constexpr size_t kBaseSize = 4;  // Informational, Warning, Failure, Fatal
  static constexpr size_t kDcdSize = 5;   // plus Dynamic Capacity (CXL 3.x)

  // Indexed by EventLog 0..3.
  std::array<InterruptSetting, 4> logs{};
  // The fifth byte, present only in the 5-byte form.
  std::optional<InterruptSetting> dynamic_capacity;

  // 4 bytes, or 5 when dynamic_capacity is set. REQUIRES: every setting's Encode() precondition.
  std::vector<uint8_t> Encode() const;
  // OutOfRange unless payload.size() is 4 or 5; InvalidArgument if any byte's mode is 11b.
  static absl::StatusOr<EventInterruptPolicy> Decode(absl::Span<const uint8_t> payload);
  friend bool operator==(const EventInterruptPolicy&, const EventInterruptPolicy&) = default;
};

}  // namespace ecd::cxl

#endif  // ECD_LIB_CXL_MAILBOX_H_
