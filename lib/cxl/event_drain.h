// EventDrainer: the host side of a CXL memory device's event logs, as the Linux driver runs it
// (drivers/cxl/core/mbox.c cxl_mem_get_event_records): drain the Fatal, Failure, Warning and
// Informational logs in that order; for each, Get Event Records until a Get returns none, hand
// every record to the handler, and Clear the handles the Get returned (in order, in batches that
// fit the payload). More Records is not trusted: the loop always ends on an empty Get. An
// overflow is reported to the overflow handler, never treated as fatal.
#ifndef ECD_LIB_CXL_EVENT_DRAIN_H_
#define ECD_LIB_CXL_EVENT_DRAIN_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/cxl/mailbox.h"

namespace ecd::cxl {

// Sends one mailbox command to the device and returns its response.
using MailboxFn = std::function<MailboxResponse(uint16_t opcode, absl::Span<const uint8_t> input)>;

struct OverflowReport {
  EventLog log = EventLog::kInformational;
  uint16_t overflow_count = 0;
  uint64_t first_overflow_ts = 0;
  uint64_t last_overflow_ts = 0;
};

struct DrainStats {
  uint64_t records = 0;  // handed to the handler
  uint64_t gets = 0;
  uint64_t clears = 0;
  uint64_t overflows = 0;  // Gets that reported an overflow
};

class EventDrainer {
 public:
  using RecordHandler = std::function<void(EventLog, const RawEventRecord&)>;
  using OverflowHandler = std::function<void(const OverflowReport&)>;

  // `payload_size` is the device's mailbox payload size (bytes, >= 256).
  EventDrainer(MailboxFn mailbox, size_t payload_size, RecordHandler on_record,
               OverflowHandler on_overflow);

  // Drains the logs in `logs` (in the order given; DrainAll uses Fatal, Failure, Warning,
  // Informational). Returns the number of records handled, or the first mailbox failure (with
  // the return code name); records handled before a failure stay handled.
  absl::StatusOr<uint64_t> Drain(absl::Span<const EventLog> logs);
  absl::StatusOr<uint64_t> DrainAll();

  const DrainStats& stats() const { return stats_; }

 private:
  absl::StatusOr<uint64_t> DrainLog(EventLog log);

  MailboxFn mailbox_;
  size_t payload_size_;
  RecordHandler on_record_;
  OverflowHandler on_overflow_;
  DrainStats stats_;
};

// The handle of a record (common header offset 0x14, little-endian).
uint16_t RecordHandle(const RawEventRecord& record);

}  // namespace ecd::cxl

#endif  // ECD_LIB_CXL_EVENT_DRAIN_H_
