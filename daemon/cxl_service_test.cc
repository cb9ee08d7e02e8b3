// Tests HealthEventFromJson, the parser of `ecctl cxl ingest` JSON lines: what ecd prints comes
// back as the policy input of the raw record, and numbers of any size convert without undefined
// behaviour (tests/fuzz/cxl_ingest_fuzz.cc found the out-of-range conversions).
#include "daemon/cxl_service.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "lib/cxl/event_record.h"
#include "lib/repair/cxl_monitor.h"

namespace ecd::daemon {
namespace {

TEST(HealthEventFromJsonTest, TheIntegrationTestsAgentLine) {
  absl::StatusOr<repair::HealthEvent> e = HealthEventFromJson(
      R"({"system":"cxl","memdev":"mem5","event":"cxl_memory_module","log":"Failure",)"
      R"("hdr_flags":2,"health_status":4,"media_status":0})",
      0);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->kind, repair::HealthEvent::Kind::kMemoryModule);
  EXPECT_EQ(e->device, 5u);
  EXPECT_EQ(e->log, 2);
  EXPECT_EQ(e->severity, 2);
  EXPECT_EQ(e->health_status, 4);
}

TEST(HealthEventFromJsonTest, OutOfRangeNumbersSaturate) {
  absl::StatusOr<repair::HealthEvent> e = HealthEventFromJson(
      R"({"event":"cxl_dram","log":1e300,"hdr_flags":-5,"dpa":1.8446744073709552e19,)"
      R"("descriptor":300,"device_temp":-99999,"life_used":1e20,"health_status":-1,)"
      R"("media_status":"1e400","add_status":"nan"})",
      3);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->log, INT32_MAX);
  EXPECT_EQ(e->severity, 0);  // negative flags are 0
  EXPECT_EQ(e->dpa, UINT64_MAX & cxl::kDpaMask);
  EXPECT_EQ(e->descriptor, 255);
  EXPECT_EQ(e->temperature, INT16_MIN);
  EXPECT_EQ(e->life_used, 255);
  EXPECT_EQ(e->health_status, 0);
  EXPECT_EQ(e->additional_status, 0);  // NaN
  EXPECT_EQ(e->device, 3u);
}

TEST(HealthEventFromJsonTest, ARecordsJsonGivesTheRawRecordsEvent) {
  cxl::GeneralMediaRecord g;
  g.header.flags = static_cast<uint32_t>(cxl::Severity::kFailure) | cxl::kFlagPermanentCondition;
  g.physical_address = ~uint64_t{0};  // the largest DPA, 2^64 - 64: above 2^53
  g.descriptor = cxl::kDescriptorUncorrectable;
  const cxl::EventRecord record = g;
  const std::string line = cxl::RecordToJson(record, "Failure");
  absl::StatusOr<repair::HealthEvent> got = HealthEventFromJson(line, 1);
  ASSERT_TRUE(got.ok()) << got.status();
  const repair::HealthEvent want =
      repair::HealthEventFromRecord(1, cxl::EventLog::kFailure, record);
  EXPECT_EQ(got->kind, want.kind);
  EXPECT_EQ(got->log, want.log);
  EXPECT_EQ(got->severity, want.severity);
  EXPECT_EQ(got->permanent, want.permanent);
  EXPECT_EQ(got->descriptor, want.descriptor);
  EXPECT_EQ(got->dpa, want.dpa);  // the double rounds to 2^64, which saturates back to it
}

}  // namespace
}  // namespace ecd::daemon
