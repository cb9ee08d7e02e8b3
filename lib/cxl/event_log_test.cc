// Tests for the emulated device's event logs: mailbox outputs compared with byte images built by
// hand, paging, overflow accounting with a fake clock, Clear ordering rules, handle wrap,
// interrupt policy and interrupts, and the Event Status register.
#include "lib/cxl/event_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace ecd::cxl {
namespace {

using Bytes = std::vector<uint8_t>;

// A record whose bytes are seed, seed+1, ... except the handle (0x14..0x15) and timestamp
// (0x18..0x1F), which are left 0 for the device to fill.
RawEventRecord Pattern(uint8_t seed) {
  RawEventRecord r;
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<uint8_t>(seed + i);
  for (size_t i = 0x14; i < 0x16; ++i) r[i] = 0;
  for (size_t i = 0x18; i < 0x20; ++i) r[i] = 0;
  return r;
}

// `r` as the device stores it: handle and timestamp written little-endian.
RawEventRecord Stored(RawEventRecord r, uint16_t handle, uint64_t ts) {
  r[0x14] = static_cast<uint8_t>(handle);
  r[0x15] = static_cast<uint8_t>(handle >> 8);
  for (int i = 0; i < 8; ++i) r[0x18 + i] = static_cast<uint8_t>(ts >> (8 * i));
  return r;
}

void Append(Bytes& out, const RawEventRecord& r) { out.insert(out.end(), r.begin(), r.end()); }

// A Get Event Records output header built by hand (reference section 3 table).
Bytes Header(uint8_t flags, uint16_t overflow_count, uint64_t first, uint64_t last,
             uint16_t count) {
  Bytes h(0x20, 0);
  h[0x00] = flags;
  h[0x02] = static_cast<uint8_t>(overflow_count);
  h[0x03] = static_cast<uint8_t>(overflow_count >> 8);
  for (int i = 0; i < 8; ++i) {
    h[0x04 + i] = static_cast<uint8_t>(first >> (8 * i));
    h[0x0C + i] = static_cast<uint8_t>(last >> (8 * i));
  }
  h[0x14] = static_cast<uint8_t>(count);
  h[0x15] = static_cast<uint8_t>(count >> 8);
  return h;
}

Bytes ClearInput(uint8_t log, uint8_t flags, const std::vector<uint16_t>& handles) {
  Bytes b = {log, flags, static_cast<uint8_t>(handles.size()), 0, 0, 0};
  for (uint16_t h : handles) {
    b.push_back(static_cast<uint8_t>(h));
    b.push_back(static_cast<uint8_t>(h >> 8));
  }
  return b;
}

uint16_t HandleOf(const Bytes& get_output, size_t i) {
  const size_t off = 0x20 + 128 * i + 0x14;
  return static_cast<uint16_t>(get_output[off] | (get_output[off + 1] << 8));
}

class EventLogDeviceTest : public ::testing::Test {
 protected:
  std::unique_ptr<EventLogDevice> Make(EventLogDeviceOptions options = {}) {
    options.clock = [this] { return now_; };
    auto dev = EventLogDevice::Create(options);
    EXPECT_TRUE(dev.ok()) << dev.status();
    return dev.ok() ? std::move(*dev) : nullptr;
  }

  InsertResult Insert(EventLogDevice& dev, EventLog log, const RawEventRecord& r) {
    auto res = dev.InsertRecord(log, r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? *res : InsertResult{};
  }

  MailboxResponse Get(EventLogDevice& dev, uint8_t log) {
    const Bytes in = {log};
    return dev.Execute(kOpGetEventRecords, in);
  }

  ReturnCode Clear(EventLogDevice& dev, uint8_t log, uint8_t flags,
                   const std::vector<uint16_t>& handles) {
    const MailboxResponse r = dev.Execute(kOpClearEventRecords, ClearInput(log, flags, handles));
    EXPECT_TRUE(r.output.empty());
    return r.rc;
  }

  uint64_t now_ = 1000;
};

TEST_F(EventLogDeviceTest, CreateValidatesOptions) {
  EventLogDeviceOptions o;
  EXPECT_TRUE(EventLogDevice::Create(o).ok());
  o.payload_size = 128;
  EXPECT_EQ(EventLogDevice::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.payload_size = 1000;  // not a power of two
  EXPECT_EQ(EventLogDevice::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.payload_size = 2u << 20;
  EXPECT_EQ(EventLogDevice::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.payload_size = 256;
  EXPECT_TRUE(EventLogDevice::Create(o).ok());
  o.payload_size = 1u << 20;
  EXPECT_TRUE(EventLogDevice::Create(o).ok());
  o.capacity[2] = 0;
  EXPECT_EQ(EventLogDevice::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.capacity[2] = 65536;
  EXPECT_EQ(EventLogDevice::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.capacity[2] = 65535;
  EXPECT_TRUE(EventLogDevice::Create(o).ok());
  o.initial_policy[1].mode = InterruptMode::kReserved;
  EXPECT_EQ(EventLogDevice::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(EventLogDeviceTest, InsertWritesHandleAndTimestampOnly) {
  auto dev = Make();
  const RawEventRecord rec = Pattern(0x30);
  now_ = 0x0102030405060708ULL;
  InsertResult r = Insert(*dev, EventLog::kWarning, rec);
  EXPECT_TRUE(r.stored);
  EXPECT_EQ(r.handle, 1);
  EXPECT_FALSE(r.interrupt_raised);

  // A record with its own timestamp keeps it.
  RawEventRecord own = Pattern(0x50);
  own[0x18] = 0x99;
  r = Insert(*dev, EventLog::kWarning, own);
  EXPECT_EQ(r.handle, 2);

  const MailboxResponse g = Get(*dev, 1);
  ASSERT_EQ(g.rc, ReturnCode::kSuccess);
  Bytes want = Header(0x00, 0, 0, 0, 2);
  Append(want, Stored(rec, 1, 0x0102030405060708ULL));
  Append(want, Stored(own, 2, 0x99));
  EXPECT_EQ(g.output, want);
  // Byte-level spot checks of the first record image.
  EXPECT_EQ(g.output[0x20 + 0x14], 0x01);
  EXPECT_EQ(g.output[0x20 + 0x15], 0x00);
  EXPECT_EQ(g.output[0x20 + 0x18], 0x08);
  EXPECT_EQ(g.output[0x20 + 0x1F], 0x01);
  EXPECT_EQ(g.output[0x20 + 0x10], 0x40);  // untouched pattern byte (0x30 + 0x10)
}

TEST_F(EventLogDeviceTest, HandlesArePerLog) {
  auto dev = Make();
  EXPECT_EQ(Insert(*dev, EventLog::kInformational, Pattern(0)).handle, 1);
  EXPECT_EQ(Insert(*dev, EventLog::kFatal, Pattern(0)).handle, 1);
  EXPECT_EQ(Insert(*dev, EventLog::kInformational, Pattern(0)).handle, 2);
  EXPECT_EQ(Insert(*dev, EventLog::kFailure, Pattern(0)).handle, 1);
}

TEST_F(EventLogDeviceTest, GetOnEmptyLogIsAHeaderOnly) {
  auto dev = Make();
  for (uint8_t log = 0; log < 4; ++log) {
    const MailboxResponse g = Get(*dev, log);
    EXPECT_EQ(g.rc, ReturnCode::kSuccess);
    EXPECT_EQ(g.output, Bytes(0x20, 0));
  }
}

TEST_F(EventLogDeviceTest, GetDoesNotRemoveRecords) {
  auto dev = Make();
  Insert(*dev, EventLog::kFailure, Pattern(1));
  Insert(*dev, EventLog::kFailure, Pattern(2));
  const MailboxResponse a = Get(*dev, 2);
  const MailboxResponse b = Get(*dev, 2);
  ASSERT_EQ(a.rc, ReturnCode::kSuccess);
  EXPECT_EQ(a.output, b.output);
  EXPECT_EQ(a.output.size(), 0x20u + 2 * 128);
  EXPECT_EQ(dev->RecordCount(EventLog::kFailure), 2u);
}

TEST_F(EventLogDeviceTest, PagingWithMinimumPayload) {
  EventLogDeviceOptions o;
  o.payload_size = 256;  // (256 - 32) / 128 = 1 record per Get
  auto dev = Make(o);
  for (int i = 0; i < 3; ++i) {
    now_ = 100 + i;
    Insert(*dev, EventLog::kFatal, Pattern(static_cast<uint8_t>(i)));
  }
  for (int i = 0; i < 3; ++i) {
    const MailboxResponse g = Get(*dev, 3);
    ASSERT_EQ(g.rc, ReturnCode::kSuccess);
    Bytes want = Header(i < 2 ? 0x02 : 0x00, 0, 0, 0, 1);
    Append(want, Stored(Pattern(static_cast<uint8_t>(i)), static_cast<uint16_t>(i + 1),
                        100 + static_cast<uint64_t>(i)));
    EXPECT_EQ(g.output, want) << i;
    EXPECT_EQ(Clear(*dev, 3, 0, {static_cast<uint16_t>(i + 1)}), ReturnCode::kSuccess);
  }
  // The Linux host always sees one last empty Get.
  EXPECT_EQ(Get(*dev, 3).output, Bytes(0x20, 0));
}

TEST_F(EventLogDeviceTest, PagingWithDefaultPayload) {
  auto dev = Make();  // 1024 bytes: (1024 - 32) / 128 = 7 records per Get
  for (int i = 0; i < 10; ++i) Insert(*dev, EventLog::kInformational, Pattern(0));
  MailboxResponse g = Get(*dev, 0);
  ASSERT_EQ(g.rc, ReturnCode::kSuccess);
  ASSERT_EQ(g.output.size(), 0x20u + 7 * 128);
  EXPECT_EQ(g.output[0], 0x02);
  EXPECT_EQ(g.output[0x14], 7);
  EXPECT_EQ(HandleOf(g.output, 6), 7);
  std::vector<uint16_t> handles;
  for (size_t i = 0; i < 7; ++i) handles.push_back(HandleOf(g.output, i));
  EXPECT_EQ(Clear(*dev, 0, 0, handles), ReturnCode::kSuccess);
  g = Get(*dev, 0);
  ASSERT_EQ(g.output.size(), 0x20u + 3 * 128);
  EXPECT_EQ(g.output[0], 0x00);
  EXPECT_EQ(g.output[0x14], 3);
  EXPECT_EQ(HandleOf(g.output, 0), 8);
}

TEST_F(EventLogDeviceTest, OverflowCountsAndTimestamps) {
  EventLogDeviceOptions o;
  o.capacity = {64, 2, 64, 64};
  auto dev = Make(o);
  now_ = 10;
  EXPECT_TRUE(Insert(*dev, EventLog::kWarning, Pattern(1)).stored);
  now_ = 20;
  EXPECT_TRUE(Insert(*dev, EventLog::kWarning, Pattern(2)).stored);
  now_ = 0x1111222233334444ULL;
  InsertResult r = Insert(*dev, EventLog::kWarning, Pattern(3));
  EXPECT_FALSE(r.stored);
  EXPECT_EQ(r.handle, 0);
  now_ = 0x5555666677778888ULL;
  EXPECT_FALSE(Insert(*dev, EventLog::kWarning, Pattern(4)).stored);
  now_ = 0x0A0B0C0D0E0F1011ULL;
  EXPECT_FALSE(Insert(*dev, EventLog::kWarning, Pattern(5)).stored);
  EXPECT_EQ(dev->RecordCount(EventLog::kWarning), 2u);

  const MailboxResponse g = Get(*dev, 1);
  ASSERT_EQ(g.rc, ReturnCode::kSuccess);
  Bytes want = {
      0x01, 0x00,                                      // overflow, no more records
      0x03, 0x00,                                      // 3 dropped
      0x44, 0x44, 0x33, 0x33, 0x22, 0x22, 0x11, 0x11,  // first overflow
      0x11, 0x10, 0x0F, 0x0E, 0x0D, 0x0C, 0x0B, 0x0A,  // last overflow
      0x02, 0x00,                                      // 2 records
      0,    0,    0,    0,    0,    0,    0,    0,    0, 0,
  };
  Append(want, Stored(Pattern(1), 1, 10));
  Append(want, Stored(Pattern(2), 2, 20));
  EXPECT_EQ(g.output, want);

  // Other logs are unaffected.
  EXPECT_EQ(Get(*dev, 0).output, Bytes(0x20, 0));

  // After the drops, the next stored record gets the next handle: drops consume none.
  EXPECT_EQ(Clear(*dev, 1, 0, {1}), ReturnCode::kSuccess);
  EXPECT_EQ(Insert(*dev, EventLog::kWarning, Pattern(6)).handle, 3);
}

TEST_F(EventLogDeviceTest, OverflowCountSaturates) {
  EventLogDeviceOptions o;
  o.capacity = {1, 64, 64, 64};
  auto dev = Make(o);
  for (int i = 0; i < 0x10000 + 5; ++i) {
    now_ = 1000 + static_cast<uint64_t>(i);
    Insert(*dev, EventLog::kInformational, Pattern(0));
  }
  const MailboxResponse g = Get(*dev, 0);
  const Bytes want_header = Header(0x01, 0xFFFF, 1001, 1000 + 0x10000 + 4, 1);
  ASSERT_GE(g.output.size(), 0x20u);
  EXPECT_EQ(Bytes(g.output.begin(), g.output.begin() + 0x20), want_header);
}

TEST_F(EventLogDeviceTest, ClearInOrderPartialAndFull) {
  auto dev = Make();
  for (int i = 0; i < 4; ++i) Insert(*dev, EventLog::kFailure, Pattern(static_cast<uint8_t>(i)));
  EXPECT_EQ(Clear(*dev, 2, 0, {1, 2}), ReturnCode::kSuccess);
  MailboxResponse g = Get(*dev, 2);
  Bytes want = Header(0, 0, 0, 0, 2);
  Append(want, Stored(Pattern(2), 3, 1000));
  Append(want, Stored(Pattern(3), 4, 1000));
  EXPECT_EQ(g.output, want);
  EXPECT_EQ(Clear(*dev, 2, 0, {3, 4}), ReturnCode::kSuccess);
  EXPECT_EQ(Get(*dev, 2).output, Bytes(0x20, 0));
  EXPECT_EQ(dev->RecordCount(EventLog::kFailure), 0u);
  // Zero handles without Clear All: a no-op.
  EXPECT_EQ(Clear(*dev, 2, 0, {}), ReturnCode::kSuccess);
}

TEST_F(EventLogDeviceTest, ClearRejectsOutOfOrderAndUnknownHandlesClearingNothing) {
  auto dev = Make();
  for (int i = 0; i < 3; ++i) Insert(*dev, EventLog::kWarning, Pattern(static_cast<uint8_t>(i)));
  const Bytes before = Get(*dev, 1).output;
  const std::vector<std::vector<uint16_t>> bad = {
      {2},           // skips the oldest
      {2, 1},        // reversed
      {1, 3},        // skips one in the middle
      {1, 2, 3, 4},  // more handles than records
      {9},           // unknown
      {0},           // never valid
      {1, 1},        // repeated
  };
  for (const auto& handles : bad) {
    EXPECT_EQ(Clear(*dev, 1, 0, handles), ReturnCode::kInvalidHandle);
    EXPECT_EQ(Get(*dev, 1).output, before);
  }
  // The right handles for the wrong log.
  EXPECT_EQ(Clear(*dev, 0, 0, {1}), ReturnCode::kInvalidHandle);
  EXPECT_EQ(Get(*dev, 1).output, before);
}

TEST_F(EventLogDeviceTest, ClearPayloadAndLogErrors) {
  auto dev = Make();
  Insert(*dev, EventLog::kInformational, Pattern(0));
  Bytes b = ClearInput(0, 0, {1});
  b.pop_back();
  EXPECT_EQ(dev->Execute(kOpClearEventRecords, b).rc, ReturnCode::kInvalidPayloadLength);
  b = ClearInput(0, 0, {1});
  b.push_back(0);
  EXPECT_EQ(dev->Execute(kOpClearEventRecords, b).rc, ReturnCode::kInvalidPayloadLength);
  EXPECT_EQ(dev->Execute(kOpClearEventRecords, Bytes{0, 0, 0}).rc,
            ReturnCode::kInvalidPayloadLength);
  EXPECT_EQ(Clear(*dev, 4, 0, {1}), ReturnCode::kInvalidInput);  // no Dynamic Capacity log
  EXPECT_EQ(Clear(*dev, 7, 0, {1}), ReturnCode::kInvalidInput);
  EXPECT_EQ(dev->RecordCount(EventLog::kInformational), 1u);
}

TEST_F(EventLogDeviceTest, ClearResetsOverflowState) {
  EventLogDeviceOptions o;
  o.capacity = {64, 64, 2, 64};
  auto dev = Make(o);
  for (int i = 0; i < 4; ++i) Insert(*dev, EventLog::kFailure, Pattern(0));
  ASSERT_EQ(Get(*dev, 2).output[0], 0x01);
  // A rejected clear leaves the overflow state alone.
  EXPECT_EQ(Clear(*dev, 2, 0, {2}), ReturnCode::kInvalidHandle);
  EXPECT_EQ(Get(*dev, 2).output[0], 0x01);
  // A zero-handle clear changes nothing either.
  EXPECT_EQ(Clear(*dev, 2, 0, {}), ReturnCode::kSuccess);
  EXPECT_EQ(Get(*dev, 2).output[0], 0x01);
  // Clearing one record makes the log not full and resets the overflow fields.
  EXPECT_EQ(Clear(*dev, 2, 0, {1}), ReturnCode::kSuccess);
  const MailboxResponse g = Get(*dev, 2);
  Bytes want = Header(0, 0, 0, 0, 1);
  Append(want, Stored(Pattern(0), 2, 1000));
  EXPECT_EQ(g.output, want);
}

TEST_F(EventLogDeviceTest, ClearAllOnlyOnOverflowedLog) {
  EventLogDeviceOptions o;
  o.capacity = {3, 64, 64, 64};
  auto dev = Make(o);
  for (int i = 0; i < 3; ++i) Insert(*dev, EventLog::kInformational, Pattern(0));
  // Full but not overflowed.
  EXPECT_EQ(Clear(*dev, 0, ClearEventRecordsInput::kFlagClearAll, {}), ReturnCode::kInvalidInput);
  EXPECT_EQ(dev->RecordCount(EventLog::kInformational), 3u);
  Insert(*dev, EventLog::kInformational, Pattern(0));  // dropped: now overflowed
  // Clear All must not name handles.
  EXPECT_EQ(Clear(*dev, 0, ClearEventRecordsInput::kFlagClearAll, {1}), ReturnCode::kInvalidInput);
  EXPECT_EQ(dev->RecordCount(EventLog::kInformational), 3u);
  EXPECT_EQ(Clear(*dev, 0, ClearEventRecordsInput::kFlagClearAll, {}), ReturnCode::kSuccess);
  EXPECT_EQ(dev->RecordCount(EventLog::kInformational), 0u);
  EXPECT_EQ(Get(*dev, 0).output, Bytes(0x20, 0));  // overflow state reset too
  EXPECT_EQ(dev->EventStatus(), 0u);
  // Handles continue after a Clear All.
  EXPECT_EQ(Insert(*dev, EventLog::kInformational, Pattern(0)).handle, 4);
  EXPECT_EQ(Clear(*dev, 0, ClearEventRecordsInput::kFlagClearAll, {}), ReturnCode::kInvalidInput);
}

TEST_F(EventLogDeviceTest, HandleNeverZeroAcrossWrap) {
  auto dev = Make();
  uint32_t expected = 1;
  for (int i = 0; i < 70000; ++i) {
    const InsertResult r = Insert(*dev, EventLog::kFatal, Pattern(0));
    ASSERT_TRUE(r.stored);
    ASSERT_NE(r.handle, 0) << i;
    ASSERT_EQ(r.handle, expected) << i;
    expected = expected == 0xFFFF ? 1 : expected + 1;
    // Keep two records in the log so the wrap happens with live handles around it.
    if (i >= 1) {
      const MailboxResponse g = Get(*dev, 3);
      ASSERT_EQ(g.output[0x14], 2);
      ASSERT_EQ(Clear(*dev, 3, 0, {HandleOf(g.output, 0)}), ReturnCode::kSuccess);
    }
  }
  // 70000 handles: 65535 then 1..4465. The log holds the last one.
  const MailboxResponse g = Get(*dev, 3);
  ASSERT_EQ(g.output[0x14], 1);
  EXPECT_EQ(HandleOf(g.output, 0), 70000 - 65535);
}

TEST_F(EventLogDeviceTest, ClearAcrossWrapInTemporalOrder) {
  auto dev = Make();
  for (int i = 0; i < 0xFFFE; ++i) {
    Insert(*dev, EventLog::kWarning, Pattern(0));
    ASSERT_EQ(Clear(*dev, 1, 0, {static_cast<uint16_t>(i + 1)}), ReturnCode::kSuccess);
  }
  EXPECT_EQ(Insert(*dev, EventLog::kWarning, Pattern(0)).handle, 0xFFFF);
  EXPECT_EQ(Insert(*dev, EventLog::kWarning, Pattern(0)).handle, 1);
  EXPECT_EQ(Insert(*dev, EventLog::kWarning, Pattern(0)).handle, 2);
  // Temporal order, not numeric order: 0xFFFF is the oldest.
  EXPECT_EQ(Clear(*dev, 1, 0, {1, 2}), ReturnCode::kInvalidHandle);
  EXPECT_EQ(Clear(*dev, 1, 0, {0xFFFF, 1}), ReturnCode::kSuccess);
  EXPECT_EQ(Clear(*dev, 1, 0, {2}), ReturnCode::kSuccess);
}

TEST_F(EventLogDeviceTest, GetErrors) {
  auto dev = Make();
  EXPECT_EQ(dev->Execute(kOpGetEventRecords, Bytes{}).rc, ReturnCode::kInvalidPayloadLength);
  EXPECT_EQ(dev->Execute(kOpGetEventRecords, Bytes{0, 0}).rc, ReturnCode::kInvalidPayloadLength);
  EXPECT_EQ(Get(*dev, 4).rc, ReturnCode::kInvalidInput);
  EXPECT_EQ(Get(*dev, 5).rc, ReturnCode::kInvalidInput);
  EXPECT_EQ(Get(*dev, 0xFF).rc, ReturnCode::kInvalidInput);
  EXPECT_TRUE(Get(*dev, 4).output.empty());
}

TEST_F(EventLogDeviceTest, UnknownOpcodesAndOversizedInput) {
  auto dev = Make();
  for (uint16_t op : {0x0000, 0x0104, 0x0105, 0x0106, 0x00FF, 0x4000}) {
    EXPECT_EQ(dev->Execute(op, Bytes{0}).rc, ReturnCode::kUnsupported) << op;
  }
  // More input than the 1024-byte payload register holds.
  EXPECT_EQ(dev->Execute(kOpClearEventRecords, Bytes(1025, 0)).rc,
            ReturnCode::kInvalidPayloadLength);
}

TEST_F(EventLogDeviceTest, InsertIntoUnimplementedLogFails) {
  auto dev = Make();
  EXPECT_EQ(dev->InsertRecord(EventLog::kDynamicCapacity, Pattern(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dev->InsertRecord(static_cast<EventLog>(9), Pattern(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dev->RecordCount(EventLog::kDynamicCapacity), 0u);
}

TEST_F(EventLogDeviceTest, EventStatusBits) {
  auto dev = Make();
  EXPECT_EQ(dev->EventStatus(), 0u);
  Insert(*dev, EventLog::kWarning, Pattern(0));
  EXPECT_EQ(dev->EventStatus(), 0x2u);
  Insert(*dev, EventLog::kFatal, Pattern(0));
  EXPECT_EQ(dev->EventStatus(), 0xAu);
  Insert(*dev, EventLog::kInformational, Pattern(0));
  Insert(*dev, EventLog::kFailure, Pattern(0));
  EXPECT_EQ(dev->EventStatus(), 0xFu);
  EXPECT_EQ(Clear(*dev, 1, 0, {1}), ReturnCode::kSuccess);
  EXPECT_EQ(dev->EventStatus(), 0xDu);
  EXPECT_EQ(Clear(*dev, 3, 0, {1}), ReturnCode::kSuccess);
  EXPECT_EQ(dev->EventStatus(), 0x5u);
}

TEST_F(EventLogDeviceTest, InterruptPolicyReadBack) {
  auto dev = Make();
  MailboxResponse g = dev->Execute(kOpGetEventInterruptPolicy, Bytes{});
  ASSERT_EQ(g.rc, ReturnCode::kSuccess);
  EXPECT_EQ(g.output, Bytes({0x00, 0x00, 0x00, 0x00}));

  EXPECT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{0x51, 0x02, 0x00, 0xF1}).rc,
            ReturnCode::kSuccess);
  g = dev->Execute(kOpGetEventInterruptPolicy, Bytes{});
  EXPECT_EQ(g.output, Bytes({0x51, 0x02, 0x00, 0xF1}));

  // Reserved bits 3:2 are dropped.
  EXPECT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{0x0D, 0x01, 0x01, 0x01}).rc,
            ReturnCode::kSuccess);
  g = dev->Execute(kOpGetEventInterruptPolicy, Bytes{});
  EXPECT_EQ(g.output, Bytes({0x01, 0x01, 0x01, 0x01}));

  // Reserved mode 11b anywhere: Invalid Input, nothing changes.
  EXPECT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{0x00, 0x00, 0x00, 0x03}).rc,
            ReturnCode::kInvalidInput);
  EXPECT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{0x00, 0x00, 0x00, 0x00, 0x03}).rc,
            ReturnCode::kInvalidInput);
  g = dev->Execute(kOpGetEventInterruptPolicy, Bytes{});
  EXPECT_EQ(g.output, Bytes({0x01, 0x01, 0x01, 0x01}));

  // The 5-byte form is accepted; Get still answers 4 bytes (no Dynamic Capacity log).
  EXPECT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{0x12, 0x22, 0x32, 0x42, 0x01}).rc,
            ReturnCode::kSuccess);
  g = dev->Execute(kOpGetEventInterruptPolicy, Bytes{});
  EXPECT_EQ(g.output, Bytes({0x12, 0x22, 0x32, 0x42}));

  EXPECT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{1, 1, 1}).rc,
            ReturnCode::kInvalidPayloadLength);
  EXPECT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{1, 1, 1, 1, 1, 1}).rc,
            ReturnCode::kInvalidPayloadLength);
  EXPECT_EQ(dev->Execute(kOpGetEventInterruptPolicy, Bytes{0}).rc,
            ReturnCode::kInvalidPayloadLength);
}

TEST_F(EventLogDeviceTest, InitialPolicyFromOptions) {
  EventLogDeviceOptions o;
  o.initial_policy[3] = {InterruptMode::kFwInterrupt, 7};
  auto dev = Make(o);
  EXPECT_EQ(dev->Execute(kOpGetEventInterruptPolicy, Bytes{}).output,
            Bytes({0x00, 0x00, 0x00, 0x72}));
  EXPECT_TRUE(Insert(*dev, EventLog::kFatal, Pattern(0)).interrupt_raised);
}

TEST_F(EventLogDeviceTest, InterruptsFollowThePolicy) {
  auto dev = Make();
  std::vector<EventLog> raised;
  dev->SetInterruptHandler([&raised](EventLog log) { raised.push_back(log); });

  // All logs at No Interrupt: nothing is raised.
  for (int log = 0; log < 4; ++log) {
    EXPECT_FALSE(Insert(*dev, static_cast<EventLog>(log), Pattern(0)).interrupt_raised);
  }
  EXPECT_TRUE(raised.empty());

  // Warning MSI, Failure FW interrupt, Informational and Fatal none.
  ASSERT_EQ(dev->Execute(kOpSetEventInterruptPolicy, Bytes{0x00, 0x31, 0x02, 0x00}).rc,
            ReturnCode::kSuccess);
  EXPECT_FALSE(Insert(*dev, EventLog::kInformational, Pattern(0)).interrupt_raised);
  EXPECT_TRUE(Insert(*dev, EventLog::kWarning, Pattern(0)).interrupt_raised);
  EXPECT_TRUE(Insert(*dev, EventLog::kFailure, Pattern(0)).interrupt_raised);
  EXPECT_FALSE(Insert(*dev, EventLog::kFatal, Pattern(0)).interrupt_raised);
  EXPECT_TRUE(Insert(*dev, EventLog::kWarning, Pattern(0)).interrupt_raised);
  EXPECT_EQ(raised,
            std::vector<EventLog>({EventLog::kWarning, EventLog::kFailure, EventLog::kWarning}));

  // Removing the handler: the result still reports the interrupt, nothing is called.
  dev->SetInterruptHandler(nullptr);
  EXPECT_TRUE(Insert(*dev, EventLog::kWarning, Pattern(0)).interrupt_raised);
  EXPECT_EQ(raised.size(), 3u);
}

TEST_F(EventLogDeviceTest, DroppedInsertStillRaisesTheInterrupt) {
  EventLogDeviceOptions o;
  o.capacity = {1, 64, 64, 64};
  o.initial_policy[0] = {InterruptMode::kMsi, 0};
  auto dev = Make(o);
  int calls = 0;
  dev->SetInterruptHandler([&calls](EventLog) { ++calls; });
  EXPECT_TRUE(Insert(*dev, EventLog::kInformational, Pattern(0)).stored);
  const InsertResult r = Insert(*dev, EventLog::kInformational, Pattern(0));
  EXPECT_FALSE(r.stored);
  EXPECT_TRUE(r.interrupt_raised);
  EXPECT_EQ(calls, 2);
}

// The handler runs without the device lock: a Linux-style IRQ thread that reads the status
// register and drains each log (Get, Clear the returned handles, until Get returns 0 records)
// from inside the handler does not deadlock.
TEST_F(EventLogDeviceTest, HandlerMayDrainTheDevice) {
  EventLogDeviceOptions o;
  o.payload_size = 256;
  o.initial_policy.fill({InterruptMode::kMsi, 0});
  auto dev = Make(o);
  EventLogDevice* d = dev.get();
  int drained = 0;
  dev->SetInterruptHandler([d, &drained](EventLog) {
    for (uint64_t status = d->EventStatus(); status != 0; status = d->EventStatus()) {
      for (int log = 3; log >= 0; --log) {
        if ((status & (uint64_t{1} << log)) == 0) continue;
        while (true) {
          const MailboxResponse g =
              d->Execute(kOpGetEventRecords, Bytes{static_cast<uint8_t>(log)});
          ASSERT_EQ(g.rc, ReturnCode::kSuccess);
          const size_t n = g.output[0x14];
          if (n == 0) break;
          std::vector<uint16_t> handles;
          for (size_t i = 0; i < n; ++i) handles.push_back(HandleOf(g.output, i));
          ASSERT_EQ(
              d->Execute(kOpClearEventRecords, ClearInput(static_cast<uint8_t>(log), 0, handles))
                  .rc,
              ReturnCode::kSuccess);
          drained += static_cast<int>(n);
        }
      }
    }
  });
  Insert(*dev, EventLog::kFailure, Pattern(0));
  Insert(*dev, EventLog::kInformational, Pattern(0));
  EXPECT_EQ(drained, 2);
  EXPECT_EQ(dev->EventStatus(), 0u);
}

TEST(EventLogDeviceConcurrency, InsertersAndADrainingHost) {
  EventLogDeviceOptions o;
  o.capacity = {65535, 65535, 65535, 65535};
  auto made = EventLogDevice::Create(o);
  ASSERT_TRUE(made.ok());
  EventLogDevice& dev = **made;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&dev, &done, t] {
      for (int i = 0; i < kPerThread; ++i) {
        ASSERT_TRUE(dev.InsertRecord(static_cast<EventLog>(t % 2), RawEventRecord{}).ok());
      }
      done.fetch_add(1);
    });
  }
  int drained = 0;
  std::vector<uint32_t> last(2, 0);
  while (true) {
    const bool finished = done.load() == kThreads;
    bool any = false;
    for (uint8_t log = 0; log < 2; ++log) {
      const MailboxResponse g = dev.Execute(kOpGetEventRecords, Bytes{log});
      ASSERT_EQ(g.rc, ReturnCode::kSuccess);
      const size_t n = g.output[0x14] | (g.output[0x15] << 8);
      std::vector<uint16_t> handles;
      for (size_t i = 0; i < n; ++i) {
        handles.push_back(HandleOf(g.output, i));
        ASSERT_EQ(handles.back(), last[log] + 1);  // handles are consecutive in temporal order
        last[log] = handles.back();
      }
      if (n > 0) {
        any = true;
        ASSERT_EQ(dev.Execute(kOpClearEventRecords, ClearInput(log, 0, handles)).rc,
                  ReturnCode::kSuccess);
        drained += static_cast<int>(n);
      }
    }
    if (finished && !any) break;
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(drained, kThreads * kPerThread);
  EXPECT_EQ(dev.EventStatus(), 0u);
}

}  // namespace
}  // namespace ecd::cxl
