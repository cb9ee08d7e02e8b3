// Tests Cxl.Ingest over a real store: a request with one bad line or record (no such memdev, an
// unknown log, a DPA past the device) is refused naming the line, and nothing of it is acted on.
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
