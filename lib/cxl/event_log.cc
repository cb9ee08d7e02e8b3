// The emulated device's event logs and its Events command set handlers.
#include "lib/cxl/event_log.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"

namespace ecd::cxl {
namespace {

// Common Event Record header fields the device writes (reference section 1; CXL r3.0 Table 8-42,
// r3.1 Table 8-43, r3.2 Table 8-55): Event Record Handle (LE16) at 0x14, Timestamp (LE64, ns
// since the Unix epoch, 0 = none) at 0x18. Defined here rather than taken from a record codec
// so that this file depends only on mailbox.h.
constexpr size_t kRecordHandleOffset = 0x14;
constexpr size_t kRecordTimestampOffset = 0x18;

constexpr uint32_t kMinPayloadSize = 256;
constexpr uint32_t kMaxPayloadSize = 1u << 20;
constexpr uint32_t kMaxCapacity = 0xFFFF;

uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint16_t HandleOf(const RawEventRecord& r) { return Get16(r.data() + kRecordHandleOffset); }

MailboxResponse Fail(ReturnCode rc) { return MailboxResponse{rc, {}}; }

// The index of a log this device implements, or -1.
int DeviceLogIndex(uint8_t value) { return value < kNumDeviceEventLogs ? value : -1; }

bool RaisesInterrupt(const InterruptSetting& s) {
  return s.mode == InterruptMode::kMsi || s.mode == InterruptMode::kFwInterrupt;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventLogDevice>> EventLogDevice::Create(
    const EventLogDeviceOptions& options) {
  for (int i = 0; i < kNumDeviceEventLogs; ++i) {
    if (options.capacity[i] < 1 || options.capacity[i] > kMaxCapacity) {
      return absl::InvalidArgumentError(absl::StrFormat("%s log capacity %d is outside 1..65535",
                                                        EventLogName(static_cast<EventLog>(i)),
                                                        options.capacity[i]));
    }
    if (options.initial_policy[i].mode == InterruptMode::kReserved ||
        options.initial_policy[i].message_number > InterruptSetting::kMaxMessageNumber) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s log initial interrupt policy is invalid (mode %d, message %d)",
          EventLogName(static_cast<EventLog>(i)), static_cast<int>(options.initial_policy[i].mode),
          options.initial_policy[i].message_number));
    }
  }
  const uint32_t ps = options.payload_size;
  if (ps < kMinPayloadSize || ps > kMaxPayloadSize || (ps & (ps - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("mailbox payload size %d is not a power of two in 256..1048576", ps));
  }
  return std::unique_ptr<EventLogDevice>(new EventLogDevice(options));
}

EventLogDevice::EventLogDevice(const EventLogDeviceOptions& options)
    : options_(options),
      max_records_per_get_((options.payload_size - GetEventRecordsOutput::kHeaderSize) /
                           kEventRecordSize) {
  for (int i = 0; i < kNumDeviceEventLogs; ++i) logs_[i].interrupt = options.initial_policy[i];
}

void EventLogDevice::SetInterruptHandler(std::function<void(EventLog)> handler) {
  MutexLock lock(mu_);
  irq_handler_ = std::move(handler);
}

uint64_t EventLogDevice::Now() const {
  if (options_.clock) return options_.clock();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

absl::StatusOr<InsertResult> EventLogDevice::InsertRecord(EventLog log,
                                                          const RawEventRecord& record) {
  const int index = DeviceLogIndex(static_cast<uint8_t>(log));
  if (index < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("event log %d is not implemented by this device", static_cast<int>(log)));
  }
  InsertResult result;
  std::function<void(EventLog)> handler;
  {
    MutexLock lock(mu_);
    Log& l = logs_[index];
    const uint64_t now = Now();
    if (l.records.size() >= options_.capacity[index]) {
      if (l.overflow_count == 0) l.first_overflow_ts = now;
      l.last_overflow_ts = now;
      if (l.overflow_count < 0xFFFF) ++l.overflow_count;
    } else {
      // The log holds fewer than 0xFFFF records, so a free non-zero handle exists. With in-order
      // clearing the live handles form one cyclic run ending at the last one assigned, so the
      // first candidate is normally free; the loop guards the invariant regardless.
      uint16_t h = l.next_handle;
      while (h == 0 || l.live.test(h)) h = static_cast<uint16_t>(h + 1);
      l.next_handle = static_cast<uint16_t>(h == 0xFFFF ? 1 : h + 1);
      RawEventRecord stored = record;
      Put16(stored.data() + kRecordHandleOffset, h);
      if (Get64(stored.data() + kRecordTimestampOffset) == 0) {
        Put64(stored.data() + kRecordTimestampOffset, now);
      }
      l.records.push_back(stored);
      l.live.set(h);
      result.stored = true;
      result.handle = h;
    }
    result.interrupt_raised = RaisesInterrupt(l.interrupt);
    if (result.interrupt_raised) handler = irq_handler_;
  }
  if (handler) handler(log);
  return result;
}

uint64_t EventLogDevice::EventStatus() const {
  MutexLock lock(mu_);
  uint64_t status = 0;
  for (int i = 0; i < kNumDeviceEventLogs; ++i) {
    if (!logs_[i].records.empty()) status |= uint64_t{1} << i;
  }
  return status;
}

size_t EventLogDevice::RecordCount(EventLog log) const {
  const int index = DeviceLogIndex(static_cast<uint8_t>(log));
  if (index < 0) return 0;
  MutexLock lock(mu_);
  return logs_[index].records.size();
}

MailboxResponse EventLogDevice::Execute(uint16_t opcode, absl::Span<const uint8_t> input) {
  switch (opcode) {
    case kOpGetEventRecords:
    case kOpClearEventRecords:
    case kOpGetEventInterruptPolicy:
    case kOpSetEventInterruptPolicy:
      break;
    default:
      return Fail(ReturnCode::kUnsupported);
  }
  if (input.size() > options_.payload_size) return Fail(ReturnCode::kInvalidPayloadLength);
  MutexLock lock(mu_);
  switch (opcode) {
    case kOpGetEventRecords:
      return GetEventRecords(input);
    case kOpClearEventRecords:
      return ClearEventRecords(input);
    case kOpGetEventInterruptPolicy:
      return GetInterruptPolicy(input);
    default:
      return SetInterruptPolicy(input);
  }
}

MailboxResponse EventLogDevice::GetEventRecords(absl::Span<const uint8_t> input) {
  absl::StatusOr<GetEventRecordsInput> in = GetEventRecordsInput::Decode(input);
  if (!in.ok()) return Fail(ReturnCodeForDecodeError(in.status()));
  const int index = DeviceLogIndex(static_cast<uint8_t>(in->log));
  if (index < 0) return Fail(ReturnCode::kInvalidInput);
  const Log& l = logs_[index];

  GetEventRecordsOutput out;
  const size_t n = std::min(l.records.size(), max_records_per_get_);
  out.records.assign(l.records.begin(), l.records.begin() + static_cast<ptrdiff_t>(n));
  out.more_records = l.records.size() > n;
  if (l.overflow_count != 0) {
    out.overflow = true;
    out.overflow_count = l.overflow_count;
    out.first_overflow_ts = l.first_overflow_ts;
    out.last_overflow_ts = l.last_overflow_ts;
  }
  return MailboxResponse{ReturnCode::kSuccess, out.Encode()};
}

MailboxResponse EventLogDevice::ClearEventRecords(absl::Span<const uint8_t> input) {
  absl::StatusOr<ClearEventRecordsInput> in = ClearEventRecordsInput::Decode(input);
  if (!in.ok()) return Fail(ReturnCodeForDecodeError(in.status()));
  const int index = DeviceLogIndex(static_cast<uint8_t>(in->log));
  if (index < 0) return Fail(ReturnCode::kInvalidInput);
  Log& l = logs_[index];

  if (in->clear_all) {
    if (l.overflow_count == 0 || !in->handles.empty()) return Fail(ReturnCode::kInvalidInput);
    l.records.clear();
    l.live.reset();
  } else {
    if (in->handles.size() > l.records.size()) return Fail(ReturnCode::kInvalidHandle);
    for (size_t i = 0; i < in->handles.size(); ++i) {
      // Handle 0 never matches: no stored record has handle 0.
      if (in->handles[i] != HandleOf(l.records[i])) return Fail(ReturnCode::kInvalidHandle);
    }
    if (in->handles.empty()) return MailboxResponse{ReturnCode::kSuccess, {}};
    for (size_t i = 0; i < in->handles.size(); ++i) {
      l.live.reset(HandleOf(l.records.front()));
      l.records.pop_front();
    }
  }
  l.overflow_count = 0;
  l.first_overflow_ts = 0;
  l.last_overflow_ts = 0;
  return MailboxResponse{ReturnCode::kSuccess, {}};
}

MailboxResponse EventLogDevice::GetInterruptPolicy(absl::Span<const uint8_t> input) const {
  if (!input.empty()) return Fail(ReturnCode::kInvalidPayloadLength);
  EventInterruptPolicy policy;
  for (int i = 0; i < kNumDeviceEventLogs; ++i) policy.logs[i] = logs_[i].interrupt;
  return MailboxResponse{ReturnCode::kSuccess, policy.Encode()};
}

MailboxResponse EventLogDevice::SetInterruptPolicy(absl::Span<const uint8_t> input) {
  absl::StatusOr<EventInterruptPolicy> policy = EventInterruptPolicy::Decode(input);
  if (!policy.ok()) return Fail(ReturnCodeForDecodeError(policy.status()));
  for (int i = 0; i < kNumDeviceEventLogs; ++i) logs_[i].interrupt = policy->logs[i];
  return MailboxResponse{ReturnCode::kSuccess, {}};
}

}  // namespace ecd::cxl
