// Events command set payload codecs and the mapping of decode errors to return codes.
#include "lib/cxl/mailbox.h"

#include <cassert>
#include <cstring>

#include "absl/strings/str_format.h"

namespace ecd::cxl {
namespace {

void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Field offsets of the Get Event Records output header.
constexpr size_t kGetFlags = 0x00;
constexpr size_t kGetOverflowCount = 0x02;
constexpr size_t kGetFirstOverflowTs = 0x04;
constexpr size_t kGetLastOverflowTs = 0x0C;
constexpr size_t kGetRecordCount = 0x14;

// Field offsets of the Clear Event Records input.
constexpr size_t kClearLog = 0x00;
constexpr size_t kClearFlags = 0x01;
constexpr size_t kClearCount = 0x02;

absl::StatusOr<EventLog> DecodeLog(uint8_t value, std::string_view command) {
  if (!IsDefinedEventLog(value)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: event log 0x%02x is not defined", command, value));
  }
  return static_cast<EventLog>(value);
}

}  // namespace

ReturnCode ReturnCodeForDecodeError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return ReturnCode::kSuccess;
    case absl::StatusCode::kOutOfRange:
      return ReturnCode::kInvalidPayloadLength;
    case absl::StatusCode::kInvalidArgument:
      return ReturnCode::kInvalidInput;
    default:
      return ReturnCode::kInternalError;
  }
}

std::vector<uint8_t> GetEventRecordsInput::Encode() const { return {static_cast<uint8_t>(log)}; }

absl::StatusOr<GetEventRecordsInput> GetEventRecordsInput::Decode(
    absl::Span<const uint8_t> payload) {
  if (payload.size() != 1) {
    return absl::OutOfRangeError(
        absl::StrFormat("Get Event Records: input payload is %d bytes, want 1", payload.size()));
  }
  absl::StatusOr<EventLog> log = DecodeLog(payload[0], "Get Event Records");
  if (!log.ok()) return log.status();
  return GetEventRecordsInput{*log};
}

std::vector<uint8_t> GetEventRecordsOutput::Encode() const {
  assert(records.size() <= 0xFFFF);
  std::vector<uint8_t> out(kHeaderSize + kEventRecordSize * records.size(), 0);
  out[kGetFlags] =
      static_cast<uint8_t>((overflow ? kFlagOverflow : 0) | (more_records ? kFlagMoreRecords : 0));
  Put16(&out[kGetOverflowCount], overflow_count);
  Put64(&out[kGetFirstOverflowTs], first_overflow_ts);
  Put64(&out[kGetLastOverflowTs], last_overflow_ts);
  Put16(&out[kGetRecordCount], static_cast<uint16_t>(records.size()));
  for (size_t i = 0; i < records.size(); ++i) {
    std::memcpy(&out[kHeaderSize + i * kEventRecordSize], records[i].data(), kEventRecordSize);
  }
  return out;
}

absl::StatusOr<GetEventRecordsOutput> GetEventRecordsOutput::Decode(
    absl::Span<const uint8_t> payload) {
  if (payload.size() < kHeaderSize) {
    return absl::OutOfRangeError(absl::StrFormat(
        "Get Event Records: output payload is %d bytes, shorter than the 32-byte header",
        payload.size()));
  }
  const uint8_t* p = payload.data();
  const size_t count = Get16(p + kGetRecordCount);
  const size_t need = kHeaderSize + kEventRecordSize * count;
  if (payload.size() < need) {
    return absl::OutOfRangeError(
        absl::StrFormat("Get Event Records: output payload is %d bytes, but %d records need %d",
                        payload.size(), count, need));
  }
  GetEventRecordsOutput out;
  out.overflow = (p[kGetFlags] & kFlagOverflow) != 0;
  out.more_records = (p[kGetFlags] & kFlagMoreRecords) != 0;
  out.overflow_count = Get16(p + kGetOverflowCount);
  out.first_overflow_ts = Get64(p + kGetFirstOverflowTs);
  out.last_overflow_ts = Get64(p + kGetLastOverflowTs);
  out.records.resize(count);
  for (size_t i = 0; i < count; ++i) {
    std::memcpy(out.records[i].data(), p + kHeaderSize + i * kEventRecordSize, kEventRecordSize);
  }
  return out;
}

std::vector<uint8_t> ClearEventRecordsInput::Encode() const {
  assert(handles.size() <= kMaxHandles);
  std::vector<uint8_t> out(kHeaderSize + 2 * handles.size(), 0);
  out[kClearLog] = static_cast<uint8_t>(log);
  out[kClearFlags] = clear_all ? kFlagClearAll : 0;
  out[kClearCount] = static_cast<uint8_t>(handles.size());
  for (size_t i = 0; i < handles.size(); ++i) Put16(&out[kHeaderSize + 2 * i], handles[i]);
  return out;
}

absl::StatusOr<ClearEventRecordsInput> ClearEventRecordsInput::Decode(
    absl::Span<const uint8_t> payload) {
  if (payload.size() < kHeaderSize) {
    return absl::OutOfRangeError(absl::StrFormat(
        "Clear Event Records: input payload is %d bytes, shorter than the 6-byte header",
        payload.size()));
  }
  const uint8_t* p = payload.data();
  const size_t count = p[kClearCount];
  if (payload.size() != kHeaderSize + 2 * count) {
    return absl::OutOfRangeError(
        absl::StrFormat("Clear Event Records: input payload is %d bytes, but %d handles need %d",
                        payload.size(), count, kHeaderSize + 2 * count));
  }
  absl::StatusOr<EventLog> log = DecodeLog(p[kClearLog], "Clear Event Records");
  if (!log.ok()) return log.status();
  ClearEventRecordsInput in;
  in.log = *log;
  in.clear_all = (p[kClearFlags] & kFlagClearAll) != 0;
  in.handles.resize(count);
  for (size_t i = 0; i < count; ++i) in.handles[i] = Get16(p + kHeaderSize + 2 * i);
  return in;
}

uint8_t InterruptSetting::Encode() const {
  assert(mode != InterruptMode::kReserved);
  assert(message_number <= kMaxMessageNumber);
  return static_cast<uint8_t>(((message_number & kMaxMessageNumber) << kMessageShift) |
                              (static_cast<uint8_t>(mode) & kModeMask));
}

absl::StatusOr<InterruptSetting> InterruptSetting::Decode(uint8_t byte) {
  const auto mode = static_cast<InterruptMode>(byte & kModeMask);
  if (mode == InterruptMode::kReserved) {
    return absl::InvalidArgumentError(
        absl::StrFormat("interrupt settings 0x%02x: interrupt mode 11b is reserved", byte));
  }
  return InterruptSetting{mode, static_cast<uint8_t>(byte >> kMessageShift)};
}

std::vector<uint8_t> EventInterruptPolicy::Encode() const {
  std::vector<uint8_t> out;
  out.reserve(kDcdSize);
  for (const InterruptSetting& s : logs) out.push_back(s.Encode());
  if (dynamic_capacity.has_value()) out.push_back(dynamic_capacity->Encode());
  return out;
}

absl::StatusOr<EventInterruptPolicy> EventInterruptPolicy::Decode(
    absl::Span<const uint8_t> payload) {
  if (payload.size() != kBaseSize && payload.size() != kDcdSize) {
    return absl::OutOfRangeError(absl::StrFormat(
        "Event Interrupt Policy: payload is %d bytes, want 4 or 5", payload.size()));
  }
  EventInterruptPolicy policy;
  for (size_t i = 0; i < payload.size(); ++i) {
    absl::StatusOr<InterruptSetting> s = InterruptSetting::Decode(payload[i]);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("Event Interrupt Policy: %s log: %s",
                                                        EventLogName(static_cast<EventLog>(i)),
                                                        s.status().message()));
    }
    if (i < kBaseSize) {
      policy.logs[i] = *s;
    } else {
      policy.dynamic_capacity = *s;
    }
  }
  return policy;
}

}  // namespace ecd::cxl
