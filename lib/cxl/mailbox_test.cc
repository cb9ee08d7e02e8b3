// Tests for the Events command set payload codecs against byte images built by hand from the
// reference tables, return code numbers and names, and truncated-payload decoding.
#include "lib/cxl/mailbox.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ecd::cxl {
namespace {

using Bytes = std::vector<uint8_t>;

RawEventRecord Pattern(uint8_t seed) {
  RawEventRecord r;
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<uint8_t>(seed + i);
  return r;
}

void Append(Bytes& out, const RawEventRecord& r) { out.insert(out.end(), r.begin(), r.end()); }

TEST(Opcodes, EventsCommandSet) {
  EXPECT_EQ(kOpGetEventRecords, 0x0100);
  EXPECT_EQ(kOpClearEventRecords, 0x0101);
  EXPECT_EQ(kOpGetEventInterruptPolicy, 0x0102);
  EXPECT_EQ(kOpSetEventInterruptPolicy, 0x0103);
}

TEST(EventLogs, ValuesAndNames) {
  EXPECT_EQ(static_cast<int>(EventLog::kInformational), 0);
  EXPECT_EQ(static_cast<int>(EventLog::kWarning), 1);
  EXPECT_EQ(static_cast<int>(EventLog::kFailure), 2);
  EXPECT_EQ(static_cast<int>(EventLog::kFatal), 3);
  EXPECT_EQ(static_cast<int>(EventLog::kDynamicCapacity), 4);
  EXPECT_EQ(EventLogName(EventLog::kInformational), "Informational");
  EXPECT_EQ(EventLogName(EventLog::kWarning), "Warning");
  EXPECT_EQ(EventLogName(EventLog::kFailure), "Failure");
  EXPECT_EQ(EventLogName(EventLog::kFatal), "Fatal");
  EXPECT_EQ(EventLogName(EventLog::kDynamicCapacity), "Dynamic Capacity");
  EXPECT_EQ(EventLogName(static_cast<EventLog>(5)), "Unknown");
  for (int v = 0; v < 256; ++v) EXPECT_EQ(IsDefinedEventLog(static_cast<uint8_t>(v)), v <= 4);
}

TEST(ReturnCodes, NumbersFromTheSpecTable) {
  EXPECT_EQ(static_cast<int>(ReturnCode::kSuccess), 0x00);
  EXPECT_EQ(static_cast<int>(ReturnCode::kBackgroundCommandStarted), 0x01);
  EXPECT_EQ(static_cast<int>(ReturnCode::kInvalidInput), 0x02);
  EXPECT_EQ(static_cast<int>(ReturnCode::kUnsupported), 0x03);
  EXPECT_EQ(static_cast<int>(ReturnCode::kInternalError), 0x04);
  EXPECT_EQ(static_cast<int>(ReturnCode::kRetryRequired), 0x05);
  EXPECT_EQ(static_cast<int>(ReturnCode::kBusy), 0x06);
  EXPECT_EQ(static_cast<int>(ReturnCode::kMediaDisabled), 0x07);
  EXPECT_EQ(static_cast<int>(ReturnCode::kInvalidHandle), 0x0E);
  EXPECT_EQ(static_cast<int>(ReturnCode::kInvalidPhysicalAddress), 0x0F);
  EXPECT_EQ(static_cast<int>(ReturnCode::kAborted), 0x12);
  EXPECT_EQ(static_cast<int>(ReturnCode::kInvalidPayloadLength), 0x16);
  EXPECT_EQ(static_cast<int>(ReturnCode::kInvalidLog), 0x17);
  EXPECT_EQ(static_cast<int>(ReturnCode::kResourcesExhausted), 0x1D);
  EXPECT_EQ(static_cast<int>(ReturnCode::kRequestAbortNotSupported), 0x20);
}

TEST(ReturnCodes, Names) {
  EXPECT_EQ(ReturnCodeName(ReturnCode::kSuccess), "Success");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kBackgroundCommandStarted), "Background Command Started");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kInvalidInput), "Invalid Input");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kUnsupported), "Unsupported");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kInternalError), "Internal Error");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kRetryRequired), "Retry Required");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kBusy), "Busy");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kInvalidHandle), "Invalid Handle");
  EXPECT_EQ(ReturnCodeName(ReturnCode::kInvalidPayloadLength), "Invalid Payload Length");
  EXPECT_EQ(ReturnCodeName(static_cast<ReturnCode>(0x21)), "Unknown");
  // Every code of the table has its own name.
  std::vector<std::string_view> names;
  for (int v = 0; v <= 0x20; ++v) {
    const std::string_view name = ReturnCodeName(static_cast<ReturnCode>(v));
    EXPECT_NE(name, "Unknown") << v;
    for (std::string_view seen : names) EXPECT_NE(seen, name) << v;
    names.push_back(name);
  }
}

TEST(ReturnCodes, ForDecodeError) {
  EXPECT_EQ(ReturnCodeForDecodeError(absl::OkStatus()), ReturnCode::kSuccess);
  EXPECT_EQ(ReturnCodeForDecodeError(absl::OutOfRangeError("x")),
            ReturnCode::kInvalidPayloadLength);
  EXPECT_EQ(ReturnCodeForDecodeError(absl::InvalidArgumentError("x")), ReturnCode::kInvalidInput);
  EXPECT_EQ(ReturnCodeForDecodeError(absl::InternalError("x")), ReturnCode::kInternalError);
}

TEST(GetEventRecordsInput, OneByte) {
  EXPECT_EQ(GetEventRecordsInput{EventLog::kFailure}.Encode(), Bytes({0x02}));
  EXPECT_EQ(GetEventRecordsInput{EventLog::kFatal}.Encode(), Bytes({0x03}));
  auto in = GetEventRecordsInput::Decode(Bytes{0x01});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->log, EventLog::kWarning);
  ASSERT_TRUE(GetEventRecordsInput::Decode(Bytes{0x04}).ok());  // Dynamic Capacity is defined
  EXPECT_EQ(GetEventRecordsInput::Decode(Bytes{0x05}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GetEventRecordsInput::Decode(Bytes{}).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(GetEventRecordsInput::Decode(Bytes{0x00, 0x00}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(GetEventRecordsOutput, EncodesAtSpecOffsets) {
  GetEventRecordsOutput out;
  out.overflow = true;
  out.more_records = true;
  out.overflow_count = 0x1234;
  out.first_overflow_ts = 0x0102030405060708ULL;
  out.last_overflow_ts = 0x1112131415161718ULL;
  out.records = {Pattern(0x40), Pattern(0x90)};

  Bytes want = {
      0x03, 0x00,                                            // flags: overflow | more; reserved
      0x34, 0x12,                                            // overflow error count
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,        // first overflow timestamp
      0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,        // last overflow timestamp
      0x02, 0x00,                                            // record count
      0,    0,    0,    0,    0,    0,    0,    0,    0, 0,  // reserved 0x16..0x1F
  };
  ASSERT_EQ(want.size(), 0x20u);
  Append(want, Pattern(0x40));
  Append(want, Pattern(0x90));
  EXPECT_EQ(out.Encode(), want);

  auto back = GetEventRecordsOutput::Decode(want);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, out);
}

TEST(GetEventRecordsOutput, FlagBitsSeparately) {
  GetEventRecordsOutput out;
  out.more_records = true;
  Bytes b = out.Encode();
  ASSERT_EQ(b.size(), 0x20u);
  EXPECT_EQ(b[0], 0x02);
  out.more_records = false;
  out.overflow = true;
  b = out.Encode();
  EXPECT_EQ(b[0], 0x01);
  out.overflow = false;
  EXPECT_EQ(out.Encode(), Bytes(0x20, 0));
}

TEST(GetEventRecordsOutput, DecodeIgnoresReservedAndTrailingBytes) {
  Bytes b(0x20, 0);
  b[0] = 0xFE;  // more records + reserved bits 7:2
  b[1] = 0xFF;  // reserved
  for (size_t i = 0x16; i < 0x20; ++i) b[i] = 0xAA;
  b[0x14] = 1;
  Append(b, Pattern(7));
  b.resize(b.size() + 100, 0x55);  // the rest of the host's payload buffer
  auto out = GetEventRecordsOutput::Decode(b);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->overflow);
  EXPECT_TRUE(out->more_records);
  ASSERT_EQ(out->records.size(), 1u);
  EXPECT_EQ(out->records[0], Pattern(7));
}

TEST(GetEventRecordsOutput, TruncatedPayloadsAreRejected) {
  GetEventRecordsOutput out;
  out.overflow = true;
  out.overflow_count = 3;
  out.records = {Pattern(1), Pattern(2), Pattern(3)};
  const Bytes full = out.Encode();
  ASSERT_EQ(full.size(), 0x20u + 3 * 128);
  for (size_t len = 0; len < full.size(); ++len) {
    // A copy of exactly `len` bytes, so a read past the end would be caught by sanitizers.
    const Bytes prefix(full.begin(), full.begin() + static_cast<ptrdiff_t>(len));
    auto d = GetEventRecordsOutput::Decode(prefix);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kOutOfRange) << len;
  }
  ASSERT_TRUE(GetEventRecordsOutput::Decode(full).ok());

  // A header claiming 0xFFFF records with none following.
  Bytes lying(0x20, 0);
  lying[0x14] = 0xFF;
  lying[0x15] = 0xFF;
  EXPECT_EQ(GetEventRecordsOutput::Decode(lying).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(ClearEventRecordsInput, EncodesAtSpecOffsets) {
  ClearEventRecordsInput in;
  in.log = EventLog::kFatal;
  in.handles = {0x0001, 0xBEEF, 0x1234};
  const Bytes want = {
      0x03,              // event log
      0x00,              // flags
      0x03,              // number of handles
      0x00, 0x00, 0x00,  // reserved
      0x01, 0x00, 0xEF, 0xBE, 0x34, 0x12,
  };
  EXPECT_EQ(in.Encode(), want);
  auto back = ClearEventRecordsInput::Decode(want);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, in);
}

TEST(ClearEventRecordsInput, ClearAllFlag) {
  ClearEventRecordsInput in;
  in.log = EventLog::kWarning;
  in.clear_all = true;
  EXPECT_EQ(in.Encode(), Bytes({0x01, 0x01, 0x00, 0x00, 0x00, 0x00}));
  auto back = ClearEventRecordsInput::Decode(Bytes{0x01, 0xFF, 0x00, 0xAA, 0xBB, 0xCC});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->clear_all);  // reserved flag bits and bytes ignored
  EXPECT_EQ(back->log, EventLog::kWarning);
  EXPECT_TRUE(back->handles.empty());
  back = ClearEventRecordsInput::Decode(Bytes{0x01, 0xFE, 0x00, 0x00, 0x00, 0x00});
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->clear_all);
}

TEST(ClearEventRecordsInput, MaximumHandles) {
  ClearEventRecordsInput in;
  for (int i = 1; i <= 255; ++i) in.handles.push_back(static_cast<uint16_t>(i * 257));
  const Bytes b = in.Encode();
  ASSERT_EQ(b.size(), 6u + 2 * 255);
  EXPECT_EQ(b[2], 0xFF);
  EXPECT_EQ(b[6 + 2 * 254], 0xFF);  // 255 * 257 = 0xFFFF
  EXPECT_EQ(b[7 + 2 * 254], 0xFF);
  auto back = ClearEventRecordsInput::Decode(b);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, in);
}

TEST(ClearEventRecordsInput, LengthMustBeSixPlusTwoN) {
  for (size_t len = 0; len < 6; ++len) {
    EXPECT_EQ(ClearEventRecordsInput::Decode(Bytes(len, 0)).status().code(),
              absl::StatusCode::kOutOfRange)
        << len;
  }
  Bytes b = {0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00};
  ASSERT_TRUE(ClearEventRecordsInput::Decode(b).ok());
  for (size_t len = 6; len < b.size(); ++len) {
    const Bytes prefix(b.begin(), b.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_EQ(ClearEventRecordsInput::Decode(prefix).status().code(), absl::StatusCode::kOutOfRange)
        << len;
  }
  b.push_back(0);
  EXPECT_EQ(ClearEventRecordsInput::Decode(b).status().code(), absl::StatusCode::kOutOfRange);
  // n = 0 with a stray handle.
  EXPECT_EQ(ClearEventRecordsInput::Decode(Bytes{0, 0, 0, 0, 0, 0, 1, 0}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(ClearEventRecordsInput, UndefinedLogIsInvalidArgument) {
  EXPECT_EQ(ClearEventRecordsInput::Decode(Bytes{0x05, 0, 0, 0, 0, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ClearEventRecordsInput::Decode(Bytes{0x04, 0, 0, 0, 0, 0}).ok());
}

TEST(InterruptSetting, ModeInBits1To0MessageInBits7To4) {
  EXPECT_EQ((InterruptSetting{InterruptMode::kNone, 0}.Encode()), 0x00);
  EXPECT_EQ((InterruptSetting{InterruptMode::kMsi, 0}.Encode()), 0x01);
  EXPECT_EQ((InterruptSetting{InterruptMode::kFwInterrupt, 0}.Encode()), 0x02);
  EXPECT_EQ((InterruptSetting{InterruptMode::kMsi, 5}.Encode()), 0x51);
  EXPECT_EQ((InterruptSetting{InterruptMode::kFwInterrupt, 15}.Encode()), 0xF2);

  auto s = InterruptSetting::Decode(0xA1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mode, InterruptMode::kMsi);
  EXPECT_EQ(s->message_number, 0x0A);
  s = InterruptSetting::Decode(0x0E);  // reserved bits 3:2 set, mode 10b
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mode, InterruptMode::kFwInterrupt);
  EXPECT_EQ(s->message_number, 0);
  for (int msg = 0; msg < 16; ++msg) {
    EXPECT_EQ(InterruptSetting::Decode(static_cast<uint8_t>((msg << 4) | 3)).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(EventInterruptPolicy, FourByteForm) {
  EventInterruptPolicy p;
  p.logs[0] = {InterruptMode::kMsi, 0};
  p.logs[1] = {InterruptMode::kMsi, 1};
  p.logs[2] = {InterruptMode::kFwInterrupt, 2};
  p.logs[3] = {InterruptMode::kNone, 0};
  const Bytes want = {0x01, 0x11, 0x22, 0x00};
  EXPECT_EQ(p.Encode(), want);
  auto back = EventInterruptPolicy::Decode(want);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);
  EXPECT_FALSE(back->dynamic_capacity.has_value());
}

TEST(EventInterruptPolicy, FiveByteFormCarriesDynamicCapacity) {
  EventInterruptPolicy p;
  p.logs.fill({InterruptMode::kMsi, 3});
  p.dynamic_capacity = InterruptSetting{InterruptMode::kMsi, 4};
  const Bytes want = {0x31, 0x31, 0x31, 0x31, 0x41};
  EXPECT_EQ(p.Encode(), want);
  auto back = EventInterruptPolicy::Decode(want);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);
}

TEST(EventInterruptPolicy, BadLengthAndReservedMode) {
  for (size_t len : {0, 1, 2, 3, 6, 8}) {
    EXPECT_EQ(EventInterruptPolicy::Decode(Bytes(len, 0)).status().code(),
              absl::StatusCode::kOutOfRange)
        << len;
  }
  EXPECT_EQ(EventInterruptPolicy::Decode(Bytes{0x01, 0x01, 0x03, 0x01}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EventInterruptPolicy::Decode(Bytes{0x01, 0x01, 0x01, 0x01, 0x13}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ecd::cxl
