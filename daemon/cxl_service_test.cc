// Tests HealthEventFromJson, the parser of `ecctl cxl ingest` JSON lines: what ecd prints comes
// back as the policy input of the raw record, numbers of any size convert without undefined
// behaviour (tests/fuzz/cxl_ingest_fuzz.cc found the out-of-range conversions), and a memdev or
// log that names nothing is refused. Cxl.Ingest over a real store: a request with one bad line
// or record (no such memdev, an unknown log, a DPA past the device) is refused naming the line,
// and nothing of it is acted on.
#include "daemon/cxl_service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/cxl/event_record.h"
#include "lib/repair/cxl_monitor.h"
#include "lib/repair/repair_planner.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

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
    absl::StatusOr<repair::HealthEvent> e = HealthEventFromJson(line, 0);
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
    absl::StatusOr<repair::HealthEvent> e = HealthEventFromJson(line, 0);
    ASSERT_FALSE(e.ok()) << line;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(e.status().message(),
              absl::StrCat(want, " 0..3 or Informational, Warning, Failure or Fatal (any case)"))
        << line;
  }
}

TEST(HealthEventFromJsonTest, AMemdevThatIsNotMemNIsRefused) {
  for (const char* memdev : {"mem12", "mem0", "mem007"}) {
    absl::StatusOr<repair::HealthEvent> e = HealthEventFromJson(
        absl::StrCat(R"({"event":"cxl_dram","log":0,"memdev":")", memdev, R"("})"), 9);
    ASSERT_TRUE(e.ok()) << memdev << ": " << e.status();
    EXPECT_EQ(e->device, static_cast<uint32_t>(std::stoul(memdev + 3)));
  }
  for (const char* memdev : {"memX", "mem", "mem-1", "mem+1", "mem 1", "mem1x", "cxl_mem1", "",
                             "mem99999999999", "nvme3"}) {
    absl::StatusOr<repair::HealthEvent> e = HealthEventFromJson(
        absl::StrCat(R"({"event":"cxl_dram","log":3,"memdev":")", memdev, R"("})"), 0);
    ASSERT_FALSE(e.ok()) << memdev;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(e.status().message(),
              absl::StrCat(R"("memdev" is ")", memdev, R"(", not memN (N a device number))"));
  }
  absl::StatusOr<repair::HealthEvent> number =
      HealthEventFromJson(R"({"event":"cxl_dram","log":3,"memdev":3})", 0);
  EXPECT_EQ(number.status().message(),
            R"("memdev" is not a string; give "memN" (N a device number))");
}

// Cxl.Ingest over a real store of 8 devices of 16 MiB, its repair planner and policy.
class IngestTest : public store::TempStoreTest {
 protected:
  void SetUp() override {
    store::TempStoreTest::SetUp();
    planner_ =
        std::make_unique<repair::RepairPlanner>(store_.get(), repair::RepairPlannerOptions{});
    policy_ = std::make_unique<repair::EventPolicy>(store_.get(), planner_.get(),
                                                    repair::EventPolicyOptions{});
    repair::CxlMonitorOptions options;
    options.poll_interval = absl::ZeroDuration();
    absl::StatusOr<std::unique_ptr<repair::CxlMonitor>> monitor =
        repair::CxlMonitor::Create(policy_.get(), 8, options);
    ASSERT_TRUE(monitor.ok()) << monitor.status();
    monitor_ = *std::move(monitor);
    service_ = std::make_unique<CxlService>(monitor_.get(), policy_.get(), CallRules{});
    builder_.RegisterService(service_.get());
    server_ = builder_.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Cxl::NewStub(server_->InProcessChannel({}));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    server_.reset();
    monitor_.reset();
    policy_.reset();
    planner_.reset();  // before the store
    store::TempStoreTest::TearDown();
  }

  grpc::Status Ingest(const v1::CxlIngestRequest& request, v1::CxlIngestResponse* response) {
    grpc::ClientContext context;
    return stub_->Ingest(&context, request, response);
  }
  grpc::Status IngestLines(const std::vector<std::string>& lines) {
    v1::CxlIngestRequest request;
    for (const std::string& line : lines) request.add_json_lines(line);
    v1::CxlIngestResponse response;
    return Ingest(request, &response);
  }
  // Nothing was acted on: every device online, no action counted, no job queued.
  void ExpectNothingDone() {
    absl::StatusOr<std::vector<store::DeviceStatus>> devices = store_->admin().ListDevices();
    ASSERT_TRUE(devices.ok()) << devices.status();
    for (const store::DeviceStatus& d : *devices) {
      EXPECT_EQ(d.record.state, store::DeviceState::kOnline) << "device " << d.record.id;
    }
    EXPECT_TRUE(policy_->counters().empty());
    EXPECT_TRUE(planner_->List().empty());
  }

  std::unique_ptr<repair::RepairPlanner> planner_;
  std::unique_ptr<repair::EventPolicy> policy_;
  std::unique_ptr<repair::CxlMonitor> monitor_;
  std::unique_ptr<CxlService> service_;
  grpc::ServerBuilder builder_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Cxl::Stub> stub_;
};

// A Fatal line that would fail device 0, then one bad line: nothing is done, the bad one named.
const char kFatalOn0[] = R"({"memdev":"mem0","event":"cxl_memory_module","log":3,"hdr_flags":3})";

void ExpectRefused(const grpc::Status& s, const std::string& message) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(s.error_message(), message);
}

TEST_F(IngestTest, AMemdevThatDoesNotParseFailsTheWholeRequest) {
  ExpectRefused(
      IngestLines({kFatalOn0, R"({"memdev":"memX","event":"cxl_memory_module","log":"Fatal"})"}),
      R"(line 2: "memdev" is "memX", not memN (N a device number); nothing ingested)");
  ExpectRefused(IngestLines({kFatalOn0, R"({"memdev":"mem9","event":"cxl_dram","log":3})"}),
                "line 2: device 9 does not exist (ecctl device ls); nothing ingested");
  ExpectNothingDone();
}

TEST_F(IngestTest, AnUnknownLogFailsTheWholeRequestAndLowerCaseFatalFails) {
  ExpectRefused(
      IngestLines({kFatalOn0, R"({"memdev":"mem1","event":"cxl_dram","log":"severe"})"}),
      R"(line 2: "log" is "severe", not 0..3 or Informational, Warning, Failure or Fatal (any )"
      R"(case); nothing ingested)");
  ExpectNothingDone();
  // "fatal" in lower case is the Fatal log: the device is failed, not counted as informational.
  v1::CxlIngestRequest request;
  request.add_json_lines(R"({"memdev":"mem1","event":"cxl_memory_module","log":"fatal"})");
  v1::CxlIngestResponse response;
  ASSERT_TRUE(Ingest(request, &response).ok());
  ASSERT_EQ(response.actions_size(), 1);
  EXPECT_EQ(response.actions(0), "fail");
  EXPECT_EQ((*store_->admin().ListDevices())[1].record.state, store::DeviceState::kFailed);
}

TEST_F(IngestTest, ADpaPastTheDeviceFailsTheWholeRequest) {
  const std::string past =
      absl::StrCat(R"({"memdev":"mem2","event":"cxl_general_media","log":2,"descriptor":1,"dpa":)",
                   16 << 20, "}");
  ExpectRefused(IngestLines({kFatalOn0, "", past}),  // a blank line counts as a line, skipped
                "line 3: DPA 0x1000000 is past the end of device 2: its DPAs are below 0x1000000 "
                "(16777216 bytes); nothing ingested");
  ExpectNothingDone();

  // The same as a raw record: refused by its index.
  cxl::GeneralMediaRecord g;
  g.header.set_severity(cxl::Severity::kFailure);
  g.physical_address = uint64_t{1} << 40;
  g.descriptor = cxl::kDescriptorUncorrectable;
  const std::array<uint8_t, cxl::kRecordSize> bytes = cxl::EncodeRecord(cxl::EventRecord(g));
  v1::CxlIngestRequest request;
  request.set_device(2);
  request.set_log(v1::CXL_LOG_FAILURE);
  request.add_json_lines(kFatalOn0);
  request.add_raw_records(std::string(bytes.begin(), bytes.end()));
  request.add_raw_records(std::string(bytes.begin(), bytes.end()));
  v1::CxlIngestResponse response;
  ExpectRefused(Ingest(request, &response),
                "record 0: DPA 0x10000000000 is past the end of device 2: its DPAs are below "
                "0x1000000 (16777216 bytes); nothing ingested");
  ExpectNothingDone();

  // Inside the device it is taken (a rebuild of what is there, which is nothing).
  request.clear_raw_records();
  request.clear_json_lines();
  request.add_json_lines(
      absl::StrCat(R"({"memdev":"mem2","event":"cxl_general_media","log":2,"descriptor":1,"dpa":)",
                   (16 << 20) - 64, "}"));
  ASSERT_TRUE(Ingest(request, &response).ok());
  ASSERT_EQ(response.actions_size(), 1);
  EXPECT_EQ(response.actions(0), "rebuild");
}

}  // namespace
}  // namespace ecd::daemon
