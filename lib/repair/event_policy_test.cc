// Tests for the CXL health-report policy: each kind of report maps to its action, and the
// actions move exactly what they should.
#include "lib/repair/event_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::repair {

using store::BlockRecord;
using store::DeviceState;
using store::EncodeParams;
using store::RandomBytes;
using store::TempStoreTest;
using store::VectorSink;
using store::VectorSource;

namespace {

class EventPolicyTest : public TempStoreTest {
 protected:
  void Put(const std::string& name, size_t size) {
    EncodeParams p;
    p.name = name;
    data_ = RandomBytes(size, 3);
    VectorSource src(data_);
    ASSERT_TRUE(store_->Encode(p, src).ok());
  }
  std::vector<uint8_t> data_;
};

TEST(PolicyActionNames, ParseRoundTripsEveryNameAndRefusesOthers) {
  EXPECT_EQ(PolicyActionNames(),
            (std::vector<std::string>{"ignore", "count", "rebuild", "evacuate", "fail"}));
  for (const std::string& name : PolicyActionNames()) {
    absl::StatusOr<PolicyAction> a = ParsePolicyAction(name);
    ASSERT_TRUE(a.ok()) << name;
    EXPECT_EQ(PolicyActionName(*a), name);
  }
  absl::StatusOr<PolicyAction> bad = ParsePolicyAction("rebuild-range");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "unknown CXL policy action \"rebuild-range\"; use one of ignore, count, rebuild, "
            "evacuate, fail");
}

TEST_F(EventPolicyTest, DecidesByKindAndFields) {
  RepairPlanner rebuilds(store_.get(), {});
  EventPolicy policy(store_.get(), &rebuilds, {});
  HealthEvent e;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kCount);
  e.kind = HealthEvent::Kind::kGeneralMedia;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kCount);  // no descriptor bit
  e.descriptor = 0x1;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kRebuildRange);
  e.descriptor = 0x2;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kRebuildRange);
  e.kind = HealthEvent::Kind::kDram;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kRebuildRange);
  e.severity = 3;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kFail);

  HealthEvent m;
  m.kind = HealthEvent::Kind::kMemoryModule;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kCount);
  m.health_status = 0x4;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kEvacuate);
  m.health_status = 0;
  m.replacement_needed = true;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kEvacuate);
  m.replacement_needed = false;
  m.media_status = 3;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kEvacuate);
  m.media_status = 9;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kEvacuate);
  m.media_status = 1;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kCount);
  m.life_used = 99;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kEvacuate);
  m.life_used = 10;
  m.additional_status = 2 << 2;  // temperature critical
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kEvacuate);
  m.additional_status = 0;
  m.temperature = 90;
  EXPECT_EQ(policy.Decide(m).first, PolicyAction::kEvacuate);
}

TEST_F(EventPolicyTest, CheckRefusesAnUnknownDeviceAndADpaPastTheEnd) {
  RepairPlanner rebuilds(store_.get(), {});
  EventPolicy policy(store_.get(), &rebuilds, {});
  HealthEvent e;
  e.kind = HealthEvent::Kind::kGeneralMedia;
  e.device = 7;
  e.descriptor = 1;
  e.dpa = (16 << 20) - 64;  // the last line of a 16 MiB device
  EXPECT_TRUE(policy.Check(e).ok()) << policy.Check(e);
  e.kind = HealthEvent::Kind::kDram;
  EXPECT_TRUE(policy.Check(e).ok()) << policy.Check(e);

  e.dpa = 16 << 20;
  absl::Status past = policy.Check(e);
  EXPECT_EQ(past.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(past.message(),
            "DPA 0x1000000 is past the end of device 7: its DPAs are below 0x1000000 (16777216 "
            "bytes)");
  e.kind = HealthEvent::Kind::kGeneralMedia;
  EXPECT_EQ(policy.Check(e).code(), absl::StatusCode::kInvalidArgument);
  // A Memory Module report has no DPA: only its device counts.
  e.kind = HealthEvent::Kind::kMemoryModule;
  EXPECT_TRUE(policy.Check(e).ok());

  e.device = 8;
  absl::Status missing = policy.Check(e);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), "device 8 does not exist (ecctl device ls)");
  // Checking acts on nothing.
  EXPECT_TRUE(policy.counters().empty());
  EXPECT_TRUE(rebuilds.List().empty());
}

TEST_F(EventPolicyTest, OptionsChangeTheActions) {
  RepairPlanner rebuilds(store_.get(), {});
  EventPolicyOptions o;
  o.media_error = PolicyAction::kCount;
  o.module_critical = PolicyAction::kFail;
  EventPolicy policy(store_.get(), &rebuilds, o);
  HealthEvent e;
  e.kind = HealthEvent::Kind::kGeneralMedia;
  e.descriptor = 1;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kCount);
  e.kind = HealthEvent::Kind::kMemoryModule;
  e.health_status = 4;
  EXPECT_EQ(policy.Decide(e).first, PolicyAction::kFail);
  EXPECT_EQ(*ParsePolicyAction("evacuate"), PolicyAction::kEvacuate);
  EXPECT_FALSE(ParsePolicyAction("explode").ok());
}

TEST_F(EventPolicyTest, ActionsMoveWhatTheySay) {
  Put("obj", 12 * 16384);
  RepairPlanner rebuilds(store_.get(), {});
  EventPolicy policy(store_.get(), &rebuilds, {});
  // A media error at the DPA of one block of device 4: only that block moves.
  auto st = *store_->Stat("obj", true, false);
  BlockRecord victim;
  for (const auto& s : st.stripes) {
    for (const auto& b : s.blocks) {
      if (b.record.device == 4) victim = b.record;
    }
  }
  HealthEvent gm;
  gm.kind = HealthEvent::Kind::kGeneralMedia;
  gm.device = 4;
  gm.log = 2;
  gm.descriptor = 1;
  gm.dpa = victim.lba * 4096 + 128;
  EXPECT_EQ(policy.Handle(gm), PolicyAction::kRebuildRange);
  ASSERT_TRUE(rebuilds.WaitIdle(absl::Seconds(30)));
  EXPECT_EQ(rebuilds.List()[0].blocks_moved, 1u);
  // Replacement needed on device 6: it is emptied and failed.
  HealthEvent mm;
  mm.kind = HealthEvent::Kind::kMemoryModule;
  mm.device = 6;
  mm.log = 2;
  mm.health_status = 4;
  EXPECT_EQ(policy.Handle(mm), PolicyAction::kEvacuate);
  ASSERT_TRUE(rebuilds.WaitIdle(absl::Seconds(30)));
  auto devices = *store_->admin().ListDevices();
  EXPECT_EQ(devices[6].record.state, DeviceState::kFailed);
  EXPECT_EQ(devices[6].blocks, 0u);
  // Fatal on device 1: failed at once, data still readable (degraded).
  HealthEvent fatal;
  fatal.device = 1;
  fatal.log = 3;
  fatal.severity = 3;
  EXPECT_EQ(policy.Handle(fatal), PolicyAction::kFail);
  EXPECT_EQ((*store_->admin().ListDevices())[1].record.state, DeviceState::kFailed);
  VectorSink sink;
  ASSERT_TRUE(store_->Read("obj", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data_);
  HealthEvent info;
  EXPECT_EQ(policy.Handle(info), PolicyAction::kCount);
  auto c = policy.counters();
  EXPECT_EQ(c["rebuild"], 1u);
  EXPECT_EQ(c["evacuate"], 1u);
  EXPECT_EQ(c["fail"], 1u);
  EXPECT_EQ(c["count"], 1u);
}

}  // namespace
}  // namespace ecd::repair
