// EventLogDevice: an emulated CXL Type-3 memory device's four event logs (Informational,
// Warning, Failure, Fatal), its Event Status register and the Events command set (01h) of its
// mailbox. The device side inserts 128-byte event records; the host side drives Execute() with
// Get/Clear Event Records and Get/Set Event Interrupt Policy payloads (mailbox.h) and is told of
// new records through an interrupt callback.
//
// Interpretation decisions, where the CXL specification's Events command set leaves room (Linux's
// drivers/cxl/core/mbox.c and QEMU's hw/cxl/cxl-events.c are the reference behaviours):
// - Storage: each log is a FIFO of at most `capacity` records. InsertRecord on a full log drops
//   the record and accounts an overflow: Overflow Error Count += 1 (saturating at 0xFFFF), First
//   Overflow Timestamp = clock at the first drop, Last Overflow Timestamp = clock at every drop
//   (as QEMU does). A dropped record consumes no handle.
// - Handles: each log has a counter starting at 1; the device writes the handle into the image
//   (offset 0x14). It wraps 0xFFFF -> 1 and skips any value still held by a record of that log,
//   so a handle is never 0 and never ambiguous within a log. The timestamp field (offset 0x18) is
//   written with the clock only when the inserted image has 0 there, so injectors may supply their
//   own time (QEMU always overwrites it). No other byte of the image is changed.
// - Get Event Records returns the oldest records, as many as fit in the payload
//   ((payload_size - 0x20) / 128), without removing them. More Event Records is set only when
//   records remain beyond those returned (not QEMU's "log non-empty" quirk). Overflow is set, with
//   the count and both timestamps, when the overflow count is non-zero; otherwise those fields are
//   0. The input must be exactly 1 byte (else Invalid Payload Length).
// - Clear Event Records by handle: the n handles must be the handles of the n oldest records, in
//   that order (the spec's temporal-order rule). A handle out of order, unknown, 0, or more
//   handles than records -> Invalid Handle (the spec's code; QEMU answers Invalid Input) and
//   nothing is cleared. n = 0 without Clear All is a successful no-op.
// - Clear All Events is allowed only when the log has overflowed (kernel commit 6ebe28f9ec72) and
//   only with Number of Handles = 0; otherwise Invalid Input. It empties the log.
// - Overflow reset: any successful Clear that removes at least one record resets the overflow
//   count and timestamps. Removing a record always leaves the log not full, so this is the rule
//   "reset when the log becomes not full"; it matches QEMU (reset on each pop) and the kernel mock
//   (any clear resets). Clear All resets it too.
// - Interrupt policy: Set accepts 4 or 5 bytes (else Invalid Payload Length); a mode of 11b in
//   any byte -> Invalid Input with nothing changed. The device stores each log's mode and message
//   number exactly as given (reserved bits 3:2 dropped) and Get returns them in 4 bytes. The
//   optional fifth (Dynamic Capacity) byte is validated and then ignored, since this device has no
//   Dynamic Capacity log. The device does not choose MSI message numbers itself: a Linux-style
//   host that sets 0x01 reads back message number 0.
// - Interrupts: every InsertRecord on a log whose mode is MSI/MSI-X or FW Interrupt raises the
//   event interrupt, including an insert whose record is dropped for overflow (the log's
//   overflow state changed). Mode None never raises it.
// - Logs: Get/Clear accept Event Log 0..3; 4 (Dynamic Capacity) and undefined values -> Invalid
//   Input. Opcodes other than 0100h..0103h -> Unsupported. An input payload longer than the
//   mailbox payload size -> Invalid Payload Length. Get Event Interrupt Policy takes no input
//   (else Invalid Payload Length).
//
// Thread safety: all methods may be called concurrently; one internal mutex serialises them. The
// interrupt handler is called without that mutex held and may call back into the device. The
// clock is called with it held and must not call back into the device.
#ifndef ECD_LIB_CXL_EVENT_LOG_H_
#define ECD_LIB_CXL_EVENT_LOG_H_

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/cxl/mailbox.h"
#include "lib/util/mutex.h"

namespace ecd::cxl {

// The logs this device implements: Informational, Warning, Failure, Fatal.
inline constexpr int kNumDeviceEventLogs = 4;

// Returns the current device time in nanoseconds since the Unix epoch.
using Clock = std::function<uint64_t()>;

struct EventLogDeviceOptions {
  // Records each log holds before it overflows, indexed by EventLog 0..3; each 1..65535.
  std::array<uint32_t, kNumDeviceEventLogs> capacity = {64, 64, 64, 64};
  // Mailbox payload size in bytes: a power of two (the capability register encodes it as
  // 1 << n), 256..1 MiB. Get Event Records returns at most (payload_size - 0x20) / 128 records.
  uint32_t payload_size = 1024;
  // Device time source; null means the system clock.
  Clock clock;
  // The interrupt policy at power-on (all No Interrupt by default). The reserved mode is not
  // allowed.
  std::array<InterruptSetting, kNumDeviceEventLogs> initial_policy{};
};

// What InsertRecord did.
struct InsertResult {
  bool stored = false;            // false: the log was full and the record was dropped
  uint16_t handle = 0;            // the handle written into the stored record; 0 if dropped
  bool interrupt_raised = false;  // the log's interrupt mode is MSI/MSI-X or FW Interrupt
};

class EventLogDevice {
 public:
  // InvalidArgument if an option is out of range.
  static absl::StatusOr<std::unique_ptr<EventLogDevice>> Create(
      const EventLogDeviceOptions& options = {});
  EventLogDevice(const EventLogDevice&) = delete;
  EventLogDevice& operator=(const EventLogDevice&) = delete;

  const EventLogDeviceOptions& options() const { return options_; }

  // Installs the host's event interrupt handler, called with the log that raised it. Pass nullptr
  // to remove it. The handler runs on the thread that called InsertRecord, after the device's
  // mutex is released, so it may call back into the device.
  void SetInterruptHandler(std::function<void(EventLog)> handler);

  // Device side: adds `record` to `log`, assigning its handle and (if zero) its timestamp, or
  // drops it and accounts an overflow if the log is full. Raises the interrupt per the log's
  // policy (see the header comment). InvalidArgument if `log` is not one of 0..3.
  absl::StatusOr<InsertResult> InsertRecord(EventLog log, const RawEventRecord& record);

  // The Event Status register: bit n is set while log n (Informational 0, Warning 1, Failure 2,
  // Fatal 3) holds at least one record. Other bits are 0.
  uint64_t EventStatus() const;

  // Records currently held by `log`; 0 for a log this device does not implement.
  size_t RecordCount(EventLog log) const;

  // Host side: executes one mailbox command. `input` is the input payload.
  MailboxResponse Execute(uint16_t opcode, absl::Span<const uint8_t> input);

 private:
  struct Log {
    std::deque<RawEventRecord> records;  // oldest first
    std::bitset<0x10000> live;           // handles held by `records`
    uint16_t next_handle = 1;
    uint16_t overflow_count = 0;
    uint64_t first_overflow_ts = 0;
    uint64_t last_overflow_ts = 0;
    InterruptSetting interrupt;
  };

  explicit EventLogDevice(const EventLogDeviceOptions& options);

  // The command handlers.
  MailboxResponse GetEventRecords(absl::Span<const uint8_t> input)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  MailboxResponse ClearEventRecords(absl::Span<const uint8_t> input)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  MailboxResponse GetInterruptPolicy(absl::Span<const uint8_t> input) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  MailboxResponse SetInterruptPolicy(absl::Span<const uint8_t> input)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Current device time.
  uint64_t Now() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const EventLogDeviceOptions options_;
  const size_t max_records_per_get_;

  mutable Mutex mu_;
  std::array<Log, kNumDeviceEventLogs> logs_ ABSL_GUARDED_BY(mu_);
  std::function<void(EventLog)> irq_handler_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::cxl

#endif  // ECD_LIB_CXL_EVENT_LOG_H_
