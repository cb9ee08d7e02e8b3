// Tests, through the public name functions, that every CXL enum's IsKnown agrees with its names:
// a known value has its own name, every other value gets the fallback.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "lib/cxl/event_record.h"
#include "lib/cxl/mailbox.h"

namespace ecd::cxl {
namespace {

// For every raw value of E: IsKnown(v) iff name(v) != fallback, known names are distinct, and
// the number of known values is `known`.
template <typename E, typename IsKnownFn, typename NameFn>
void ExpectAgree(IsKnownFn is_known, NameFn name, std::string_view fallback, int known,
                 uint32_t max_raw = 0xFF) {
  std::set<std::string, std::less<>> names;
  int count = 0;
  for (uint32_t raw = 0; raw <= max_raw; ++raw) {
    const E v = static_cast<E>(raw);
    SCOPED_TRACE(raw);
    if (is_known(v)) {
      ++count;
      EXPECT_NE(name(v), fallback);
      EXPECT_FALSE(name(v).empty());
      EXPECT_TRUE(names.emplace(name(v)).second) << name(v);
    } else {
      EXPECT_EQ(name(v), fallback);
    }
  }
  EXPECT_EQ(count, known);
}

TEST(EnumTables, EventRecordIsKnownAgreesWithNames) {
  auto known = [](auto v) { return IsKnown(v); };
  ExpectAgree<GmerEventType>(known, GmerEventTypeName, "Reserved", 7);
  ExpectAgree<DramEventType>(known, DramEventTypeName, "Reserved", 7);
  ExpectAgree<TransactionType>(known, TransactionTypeName, "Reserved", 9);
  ExpectAgree<MemEventSubType>(known, MemEventSubTypeName, "Reserved", 6);
  ExpectAgree<MemModuleEventType>(known, MemModuleEventTypeName, "Reserved", 9);
  ExpectAgree<MemModuleEventSubType>(known, MemModuleEventSubTypeName, "Reserved", 4);
  ExpectAgree<MediaStatus>(known, MediaStatusName, "Reserved", 10);
}

TEST(EnumTables, NamesWithoutIsKnownFallBackOutsideTheirEnum) {
  auto additional_known = [](uint8_t v) { return v <= 2; };
  ExpectAgree<uint8_t>(additional_known, AdditionalStatusName, "Reserved", 3);
  auto severity_known = [](Severity s) { return static_cast<uint8_t>(s) <= 3; };
  ExpectAgree<Severity>(severity_known, SeverityName, "Reserved", 4);
  auto kind_known = [](RecordKind k) { return k < RecordKind::kUnknown; };
  ExpectAgree<RecordKind>(kind_known, RecordKindName, "Unknown", 8);
}

TEST(EnumTables, MailboxIsDefinedEventLogAgreesWithNames) {
  auto log_known = [](EventLog l) { return IsDefinedEventLog(static_cast<uint8_t>(l)); };
  ExpectAgree<EventLog>(log_known, EventLogName, "Unknown", kNumDefinedEventLogs);
  auto rc_known = [](ReturnCode rc) { return static_cast<uint16_t>(rc) <= 0x20; };
  ExpectAgree<ReturnCode>(rc_known, ReturnCodeName, "Unknown", 0x21, 0xFFFF);
}

}  // namespace
}  // namespace ecd::cxl
