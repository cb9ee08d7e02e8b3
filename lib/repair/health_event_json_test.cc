// Tests HealthEventFromJson, the parser of `ecctl cxl ingest` JSON lines: what ecd prints comes
// back as the policy input of the raw record, numbers of any size convert without undefined
// behaviour (tests/fuzz/cxl_ingest_fuzz.cc found the out-of-range conversions), and a memdev or
// log that names nothing is refused.
#include "lib/repair/health_event_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "lib/cxl/event_record.h"
#include "lib/repair/cxl_monitor.h"

namespace ecd::repair {
namespace {

TEST(HealthEventFromJsonTest, TheIntegrationTestsAgentLine) {
  absl::StatusOr<HealthEvent> e = HealthEventFromJson(
      R"({"system":"cxl","memdev":"mem5","event":"cxl_memory_module","log":"Failure",)"
      R"("hdr_flags":2,"health_status":4,"media_status":0})",
      0);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->kind, HealthEvent::Kind::kMemoryModule);
  EXPECT_EQ(e->device, 5u);
  EXPECT_EQ(e->log, 2);
  EXPECT_EQ(e->severity, 2);
  EXPECT_EQ(e->health_status, 4);
}

TEST(HealthEventFromJsonTest, OutOfRangeNumbersSaturate) {
  absl::StatusOr<HealthEvent> e = HealthEventFromJson(
      R"({"event":"cxl_dram","log":1,"hdr_flags":-5,"dpa":1.8446744073709552e19,)"
      R"("descriptor":300,"device_temp":-99999,"life_used":1e20,"health_status":-1,)"
      R"("media_status":"1e400","add_status":"nan"})",
      3);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->log, 1);
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
  absl::StatusOr<HealthEvent> got = HealthEventFromJson(line, 1);
  ASSERT_TRUE(got.ok()) << got.status();
  const HealthEvent want = HealthEventFromRecord(1, cxl::EventLog::kFailure, record);
  EXPECT_EQ(got->kind, want.kind);
  EXPECT_EQ(got->log, want.log);
  EXPECT_EQ(got->severity, want.severity);
  EXPECT_EQ(got->permanent, want.permanent);
  EXPECT_EQ(got->descriptor, want.descriptor);
  EXPECT_EQ(got->dpa, want.dpa);  // the double rounds to 2^64, which saturates back to it
}

TEST(HealthEventFromJsonTest, LogNamesInAnyCaseAndNumbers) {
  const std::vector<std::pair<std::string, int>> cases = {{R"("Informational")", 0},
                                                          {R"("informational")", 0},
                                                          {R"("WARNING")", 1},
                                                          {R"("Failure")", 2},
                                                          {R"("fatal")", 3},
                                                          {R"("FaTaL")", 3},
                                                          {"3", 3},
                                                          {R"("2")", 2},
                                                          {"0", 0}};
  for (const auto& [log, want] : cases) {
    const std::string line = absl::StrCat(R"({"event":"cxl_dram","log":)", log, "}");
    absl::StatusOr<HealthEvent> e = HealthEventFromJson(line, 0);
    ASSERT_TRUE(e.ok()) << line << ": " << e.status();
    EXPECT_EQ(e->log, want) << line;
  }
}

TEST(HealthEventFromJsonTest, AnUnknownOrMissingLogIsRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("log":"loud")", R"("log" is "loud", not)"},
      {R"("log":"Fatal ")", R"("log" is "Fatal ", not)"},
      {R"("log":4)", R"("log" is 4, not)"},
      {R"("log":1.5)", R"("log" is 1.5, not)"},
      {R"("log":-1)", R"("log" is -1, not)"},
      {R"("log":1e300)", R"("log" is 1e+300, not)"},
      {R"("log":true)", R"("log" is not a string or a number, not)"},
      {R"("hdr_flags":3)", R"("log" is missing, not)"}};
  for (const auto& [field, want] : cases) {
    const std::string line = absl::StrCat(R"({"event":"cxl_memory_module",)", field, "}");
    absl::StatusOr<HealthEvent> e = HealthEventFromJson(line, 0);
    ASSERT_FALSE(e.ok()) << line;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(e.status().message(),
              absl::StrCat(want, " 0..3 or Informational, Warning, Failure or Fatal (any case)"))
        << line;
  }
}

TEST(HealthEventFromJsonTest, AMemdevThatIsNotMemNIsRefused) {
  for (const char* memdev : {"mem12", "mem0", "mem007"}) {
    absl::StatusOr<HealthEvent> e = HealthEventFromJson(
        absl::StrCat(R"({"event":"cxl_dram","log":0,"memdev":")", memdev, R"("})"), 9);
    ASSERT_TRUE(e.ok()) << memdev << ": " << e.status();
    EXPECT_EQ(e->device, static_cast<uint32_t>(std::stoul(memdev + 3)));
  }
  for (const char* memdev : {"memX", "mem", "mem-1", "mem+1", "mem 1", "mem1x", "cxl_mem1", "",
                             "mem99999999999", "nvme3"}) {
    absl::StatusOr<HealthEvent> e = HealthEventFromJson(
        absl::StrCat(R"({"event":"cxl_dram","log":3,"memdev":")", memdev, R"("})"), 0);
    ASSERT_FALSE(e.ok()) << memdev;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(e.status().message(),
              absl::StrCat(R"("memdev" is ")", memdev, R"(", not memN (N a device number))"));
  }
  absl::StatusOr<HealthEvent> number =
      HealthEventFromJson(R"({"event":"cxl_dram","log":3,"memdev":3})", 0);
  EXPECT_EQ(number.status().message(),
            R"("memdev" is not a string; give "memN" (N a device number))");
}

}  // namespace
}  // namespace ecd::repair
