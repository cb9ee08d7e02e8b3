// EventDrainer: Get / handle / Clear until empty, Fatal first.
#include "lib/cxl/event_drain.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace ecd::cxl {

namespace {
constexpr size_t kHandleOffset = 0x14;  // common event record header (CXL r3.1 Table 8-43)
// A log cannot hold more records than this many Gets can return; stops a device that never
// empties from looping forever.
constexpr int kMaxGetsPerLog = 1 << 16;
}  // namespace

uint16_t RecordHandle(const RawEventRecord& record) {
  return static_cast<uint16_t>(record[kHandleOffset] | (record[kHandleOffset + 1] << 8));
}

EventDrainer::EventDrainer(MailboxFn mailbox, size_t payload_size, RecordHandler on_record,
                           OverflowHandler on_overflow)
    : mailbox_(std::move(mailbox)),
      payload_size_(payload_size),
      on_record_(std::move(on_record)),
      on_overflow_(std::move(on_overflow)) {}

absl::StatusOr<uint64_t> EventDrainer::DrainAll() {
  static constexpr EventLog kOrder[] = {EventLog::kFatal, EventLog::kFailure, EventLog::kWarning,
                                        EventLog::kInformational};
  return Drain(kOrder);
}

absl::StatusOr<uint64_t> EventDrainer::Drain(absl::Span<const EventLog> logs) {
  uint64_t total = 0;
  for (EventLog log : logs) {
    absl::StatusOr<uint64_t> n = DrainLog(log);
    if (!n.ok()) return n.status();
    total += *n;
  }
  return total;
}

absl::StatusOr<uint64_t> EventDrainer::DrainLog(EventLog log) {
  const size_t max_handles =
      std::min<size_t>(ClearEventRecordsInput::kMaxHandles, (payload_size_ - 6) / 2);
  uint64_t handled = 0;
  for (int round = 0; round < kMaxGetsPerLog; ++round) {
    const std::vector<uint8_t> in = GetEventRecordsInput{log}.Encode();
    MailboxResponse r = mailbox_(kOpGetEventRecords, in);
    ++stats_.gets;
    if (r.rc != ReturnCode::kSuccess) {
      return absl::InternalError(absl::StrFormat("Get Event Records (%s log): %s",
                                                 EventLogName(log), ReturnCodeName(r.rc)));
    }
    absl::StatusOr<GetEventRecordsOutput> out = GetEventRecordsOutput::Decode(r.output);
    if (!out.ok()) {
      return absl::InternalError(absl::StrFormat("Get Event Records (%s log): bad payload: %s",
                                                 EventLogName(log), out.status().message()));
    }
    if (out->overflow) {
      ++stats_.overflows;
      if (on_overflow_) {
        on_overflow_(OverflowReport{log, out->overflow_count, out->first_overflow_ts,
                                    out->last_overflow_ts});
      }
    }
    if (out->records.empty()) return handled;
    std::vector<uint16_t> handles;
    for (const RawEventRecord& rec : out->records) {
      on_record_(log, rec);
      handles.push_back(RecordHandle(rec));
      ++handled;
      ++stats_.records;
    }
    for (size_t first = 0; first < handles.size(); first += max_handles) {
      ClearEventRecordsInput clear;
      clear.log = log;
      const size_t n = std::min(max_handles, handles.size() - first);
      clear.handles.assign(handles.begin() + first, handles.begin() + first + n);
      MailboxResponse c = mailbox_(kOpClearEventRecords, clear.Encode());
      ++stats_.clears;
      if (c.rc != ReturnCode::kSuccess) {
        return absl::InternalError(absl::StrFormat("Clear Event Records (%s log): %s",
                                                   EventLogName(log), ReturnCodeName(c.rc)));
      }
    }
  }
  return absl::InternalError(
      absl::StrFormat("%s log never empties after %d Gets", EventLogName(log), kMaxGetsPerLog));
}

}  // namespace ecd::cxl
