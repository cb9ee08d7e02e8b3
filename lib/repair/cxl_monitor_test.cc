// Tests of the CXL monitor's counting: decoded records by device, log, type and severity;
// overflows and undecodable records by device. (Decoding and the policy have their own tests;
// the daemon's integration test drives the whole path over gRPC.)
#include "lib/repair/cxl_monitor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "lib/cxl/event_record.h"
#include "lib/repair/event_policy.h"
#include "lib/repair/repair_planner.h"
#include "lib/store/store_test_util.h"

namespace ecd::repair {

using store::TempStoreTest;

namespace {

class CxlMonitorTest : public TempStoreTest {};

TEST_F(CxlMonitorTest, CountsRecordsByDeviceLogTypeAndSeverityAndOverflowsByDevice) {
  RepairPlanner rebuilds(store_.get(), {});
  EventPolicyOptions po;
  po.other = PolicyAction::kCount;
  po.media_error = PolicyAction::kCount;
  EventPolicy policy(store_.get(), &rebuilds, po);
  CxlMonitorOptions mo;
  // No interrupts and no polling: only DrainNow drains, so the third informational record
  // always finds its log full.
  mo.initial_mode = cxl::InterruptMode::kNone;
  mo.poll_interval = absl::ZeroDuration();
  mo.device.capacity = {2, 2, 2, 2};
  auto monitor = CxlMonitor::Create(&policy, 3, mo);
  ASSERT_TRUE(monitor.ok()) << monitor.status();

  cxl::GeneralMediaRecord gm;
  gm.header.set_severity(cxl::Severity::kFailure);
  gm.descriptor = cxl::kDescriptorUncorrectable;
  ASSERT_TRUE(
      (*monitor)->device(1)->InsertRecord(cxl::EventLog::kFailure, cxl::EncodeRecord(gm)).ok());
  ASSERT_TRUE(
      (*monitor)->device(1)->InsertRecord(cxl::EventLog::kFailure, cxl::EncodeRecord(gm)).ok());
  cxl::MemoryModuleRecord mm;
  mm.header.set_severity(cxl::Severity::kInformational);
  // Three records into a log of two: one overflow report.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*monitor)
                    ->device(2)
                    ->InsertRecord(cxl::EventLog::kInformational, cxl::EncodeRecord(mm))
                    .ok());
  }
  // A record with an unknown type UUID and a bad length cannot be decoded.
  cxl::RawEventRecord junk = cxl::EncodeRecord(mm);
  junk[0x10] = 0x20;  // length field: not 128
  ASSERT_TRUE((*monitor)->device(0)->InsertRecord(cxl::EventLog::kWarning, junk).ok());
  (*monitor)->DrainNow();

  const CxlMonitorStats s = (*monitor)->stats();
  using Key = std::tuple<uint32_t, std::string, std::string, std::string>;
  EXPECT_EQ(s.records_by,
            (std::map<Key, uint64_t>{{{1, "failure", "general_media", "failure"}, 2},
                                     {{2, "informational", "memory_module", "informational"}, 2}}));
  EXPECT_EQ(s.records, 4u);
  EXPECT_EQ(s.overflows, 1u);
  EXPECT_EQ(s.overflowed_records, 1u);
  EXPECT_EQ(s.overflows_by_device, (std::vector<uint64_t>{0, 0, 1}));
  EXPECT_EQ(s.overflowed_records_by_device, (std::vector<uint64_t>{0, 0, 1}));
  EXPECT_EQ(s.decode_errors, 1u);
  EXPECT_EQ(s.decode_errors_by_device, (std::vector<uint64_t>{1, 0, 0}));
}

}  // namespace
}  // namespace ecd::repair
