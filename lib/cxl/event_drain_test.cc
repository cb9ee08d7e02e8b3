// Tests for the host drain loop against the emulated device: logs drain Fatal first, every
// record is handled once and cleared, paging ends on an empty Get, overflow is reported, and a
// failing mailbox stops the drain with the return code named.
#include "lib/cxl/event_drain.h"

#include <gtest/gtest.h>

#include "lib/cxl/event_log.h"

namespace ecd::cxl {
namespace {

RawEventRecord Record(uint8_t tag) {
  RawEventRecord r{};
  r[0x10] = 0x80;  // length
  r[0x30] = tag;   // something to tell records apart
  return r;
}

TEST(EventDrainer, DrainsFatalFirstAndClearsEverything) {
  EventLogDeviceOptions o;
  o.payload_size = 256;  // one record per Get: paging is exercised
  auto dev = *EventLogDevice::Create(o);
  ASSERT_TRUE(dev->InsertRecord(EventLog::kInformational, Record(1)).ok());
  ASSERT_TRUE(dev->InsertRecord(EventLog::kWarning, Record(2)).ok());
  ASSERT_TRUE(dev->InsertRecord(EventLog::kFatal, Record(3)).ok());
  ASSERT_TRUE(dev->InsertRecord(EventLog::kFatal, Record(4)).ok());
  ASSERT_TRUE(dev->InsertRecord(EventLog::kFailure, Record(5)).ok());
  std::vector<std::pair<EventLog, uint8_t>> seen;
  EventDrainer d(
      [&](uint16_t op, absl::Span<const uint8_t> in) { return dev->Execute(op, in); }, 256,
      [&](EventLog log, const RawEventRecord& r) { seen.emplace_back(log, r[0x30]); }, nullptr);
  auto n = d.DrainAll();
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 5u);
  EXPECT_EQ(seen, (std::vector<std::pair<EventLog, uint8_t>>{{EventLog::kFatal, 3},
                                                             {EventLog::kFatal, 4},
                                                             {EventLog::kFailure, 5},
                                                             {EventLog::kWarning, 2},
                                                             {EventLog::kInformational, 1}}));
  EXPECT_EQ(dev->EventStatus(), 0u);  // all cleared
  // Each log ends on an empty Get: 5 non-empty Gets + 4 empty ones.
  EXPECT_EQ(d.stats().gets, 9u);
  EXPECT_EQ(d.stats().clears, 5u);
  // Draining again finds nothing.
  EXPECT_EQ(*d.DrainAll(), 0u);
}

TEST(EventDrainer, ReportsOverflowAndKeepsGoing) {
  EventLogDeviceOptions o;
  o.capacity = {2, 2, 2, 2};
  auto dev = *EventLogDevice::Create(o);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(dev->InsertRecord(EventLog::kWarning, Record(i)).ok());
  std::vector<OverflowReport> overflows;
  uint64_t records = 0;
  EventDrainer d([&](uint16_t op, absl::Span<const uint8_t> in) { return dev->Execute(op, in); },
                 1024, [&](EventLog, const RawEventRecord&) { ++records; },
                 [&](const OverflowReport& r) { overflows.push_back(r); });
  ASSERT_TRUE(d.DrainAll().ok());
  EXPECT_EQ(records, 2u);
  ASSERT_FALSE(overflows.empty());
  EXPECT_EQ(overflows[0].log, EventLog::kWarning);
  EXPECT_EQ(overflows[0].overflow_count, 3u);
}

TEST(EventDrainer, MailboxFailureStopsWithTheReturnCode) {
  EventDrainer d(
      [](uint16_t, absl::Span<const uint8_t>) {
        return MailboxResponse{ReturnCode::kBusy, {}};
      },
      1024, [](EventLog, const RawEventRecord&) {}, nullptr);
  auto n = d.DrainAll();
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("Busy"), std::string::npos) << n.status();
}

TEST(EventDrainer, ClearsInBatchesThatFitThePayload) {
  EventLogDeviceOptions o;
  o.payload_size = 1 << 16;  // up to 511 records per Get
  o.capacity = {400, 400, 400, 400};
  auto dev = *EventLogDevice::Create(o);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(dev->InsertRecord(EventLog::kFailure, Record(i)).ok());
  EventDrainer d([&](uint16_t op, absl::Span<const uint8_t> in) { return dev->Execute(op, in); },
                 o.payload_size, [](EventLog, const RawEventRecord&) {}, nullptr);
  EXPECT_EQ(*d.DrainAll(), 300u);
  EXPECT_EQ(d.stats().clears, 2u);  // 255 + 45 handles
  EXPECT_EQ(dev->RecordCount(EventLog::kFailure), 0u);
}

}  // namespace
}  // namespace ecd::cxl
