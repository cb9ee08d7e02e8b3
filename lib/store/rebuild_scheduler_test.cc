// Tests for proactive rebuild jobs: evacuating a device leaves it empty and failed with every
// object at full redundancy and byte-exact; a media-range job moves exactly the blocks that
// overlap the range; failing devices are resumed after a restart; the rate limit holds.
#include "lib/store/rebuild_scheduler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>

#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

class RebuildTest : public TempStoreTest {
 protected:
  void Put(const std::string& name, const std::vector<uint8_t>& data) {
    EncodeParams p;
    p.name = name;
    VectorSource src(data);
    ASSERT_TRUE(store_->Encode(p, src).ok());
    model_[name] = data;
  }
  void ExpectAllByteExactAndFullyRedundant() {
    for (const auto& [name, data] : model_) {
      VectorSink sink;
      ASSERT_TRUE(store_->Read(name, 0, 0, sink).ok()) << name;
      EXPECT_EQ(sink.bytes, data) << name;
      auto st = store_->Stat(name, false, /*verify=*/true);
      ASSERT_TRUE(st.ok());
      EXPECT_EQ(st->degraded_stripes, 0u) << name;
    }
  }
  // (object, stripe, index) -> (device, lba) of every block.
  std::map<std::tuple<std::string, uint64_t, uint32_t>, std::pair<uint32_t, uint64_t>> Layout() {
    std::map<std::tuple<std::string, uint64_t, uint32_t>, std::pair<uint32_t, uint64_t>> out;
    for (const auto& [name, data] : model_) {
      auto st = *store_->Stat(name, /*with_blocks=*/true, false);
      for (const StripeStatus& s : st.stripes) {
        for (const BlockStatus& b : s.blocks) {
          out[{name, s.index, b.record.index}] = {b.record.device, b.record.lba};
        }
      }
    }
    return out;
  }
  DeviceStatus Device(uint32_t id) { return (*store_->ListDevices())[id]; }

  std::map<std::string, std::vector<uint8_t>> model_;
};

TEST_F(RebuildTest, EvacuationEmptiesTheDeviceAndFailsIt) {
  for (int i = 0; i < 5; ++i) Put("obj" + std::to_string(i), RandomBytes(20 * 16384 + i, i));
  ASSERT_GT(Device(3).blocks, 0u);
  RebuildScheduler scheduler(store_.get(), {});
  RebuildSpec spec;
  spec.kind = RebuildKind::kEvacuateDevice;
  spec.device = 3;
  spec.reason = "test";
  const uint64_t id = scheduler.Submit(spec);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  const RebuildJob job = *scheduler.Get(id);
  EXPECT_EQ(job.state, RebuildState::kDone) << job.error;
  EXPECT_EQ(job.objects_total, 5u);
  EXPECT_EQ(job.objects_done, 5u);
  EXPECT_GT(job.blocks_moved, 0u);
  EXPECT_EQ(job.bytes_moved, job.blocks_moved * 4096);
  EXPECT_EQ(Device(3).blocks, 0u);
  EXPECT_EQ(Device(3).record.state, DeviceState::kFailed);
  EXPECT_TRUE(store_->ObjectsOnDevice(3, 0, 0)->empty());
  ExpectAllByteExactAndFullyRedundant();
  // New objects never land on the failed device.
  Put("later", RandomBytes(50000, 77));
  EXPECT_EQ(Device(3).blocks, 0u);
}

TEST_F(RebuildTest, MediaRangeMovesOnlyOverlappingBlocks) {
  for (int i = 0; i < 3; ++i) Put("obj" + std::to_string(i), RandomBytes(10 * 16384, 10 + i));
  const auto before = Layout();
  // Pick one block on device 2 and report exactly its extent.
  std::tuple<std::string, uint64_t, uint32_t> victim;
  uint64_t lba = 0;
  for (const auto& [key, where] : before) {
    if (where.first == 2) {
      victim = key;
      lba = where.second;
      break;
    }
  }
  RebuildScheduler scheduler(store_.get(), {});
  RebuildSpec spec;
  spec.kind = RebuildKind::kMediaRange;
  spec.device = 2;
  spec.first_lba = lba;
  spec.lba_count = 1;
  const uint64_t id = scheduler.Submit(spec);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  const RebuildJob job = *scheduler.Get(id);
  EXPECT_EQ(job.state, RebuildState::kDone) << job.error;
  EXPECT_EQ(job.objects_total, 1u);
  EXPECT_EQ(job.blocks_moved, 1u);
  const auto after = Layout();
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [key, where] : before) {
    if (key == victim) {
      EXPECT_NE(after.at(key).first, 2u);  // moved to another device
    } else {
      EXPECT_EQ(after.at(key), where);  // nothing else moved
    }
  }
  EXPECT_EQ(Device(2).record.state, DeviceState::kOnline);
  ExpectAllByteExactAndFullyRedundant();
}

TEST_F(RebuildTest, FailingDevicesResumeAfterRestart) {
  Put("a", RandomBytes(8 * 16384, 5));
  ASSERT_TRUE(store_->SetDeviceState(5, DeviceState::kFailing).ok());
  EXPECT_FALSE(store_->SetDeviceState(5, DeviceState::kFailing).ok());  // only from online
  Open();  // restart: the state survives in the catalog
  ASSERT_EQ(Device(5).record.state, DeviceState::kFailing);
  VectorSink sink;  // still readable
  ASSERT_TRUE(store_->Read("a", 0, 0, sink).ok());
  RebuildScheduler scheduler(store_.get(), {});
  scheduler.ResumeEvacuations();
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  ASSERT_EQ(scheduler.List().size(), 1u);
  EXPECT_EQ(scheduler.List()[0].state, RebuildState::kDone) << scheduler.List()[0].error;
  EXPECT_EQ(Device(5).record.state, DeviceState::kFailed);
  EXPECT_EQ(Device(5).blocks, 0u);
  ExpectAllByteExactAndFullyRedundant();
}

TEST_F(RebuildTest, RateLimitSpreadsTheWork) {
  Put("big", RandomBytes(64 * 16384, 6));  // 64 stripes x 6 blocks of 4 KiB
  const uint64_t on_device = Device(1).blocks;
  ASSERT_GT(on_device, 20u);
  RebuildSchedulerOptions o;
  o.rate_bytes_per_sec = on_device * 4096;  // about one second of work at the limit
  RebuildScheduler scheduler(store_.get(), o);
  RebuildSpec spec;
  spec.kind = RebuildKind::kEvacuateDevice;
  spec.device = 1;
  const absl::Time start = absl::Now();
  scheduler.Submit(spec);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  // Lower bound only: the limiter may not finish early (the batch before the last is throttled).
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(500));
  EXPECT_EQ(scheduler.List()[0].state, RebuildState::kDone);
}

// Stats: a running job shows its bytes, a recent last progress and an ETA; finished jobs are
// counted by kind and result, with their bytes, after history forgets them.
TEST_F(RebuildTest, StatsFollowARunningJobAndCountFinishedOnes) {
  for (int i = 0; i < 4; ++i) Put("obj" + std::to_string(i), RandomBytes(64 * 16384, 20 + i));
  RebuildSchedulerOptions o;
  o.rate_bytes_per_sec = Device(2).blocks * 4096 / 2;  // about two seconds of work
  o.history = 1;
  RebuildScheduler scheduler(store_.get(), o);
  RebuildStats idle = scheduler.Stats();
  EXPECT_EQ(idle.running, 0u);
  EXPECT_EQ(idle.bytes_moved, 0u);
  EXPECT_EQ(idle.last_progress, absl::InfinitePast());
  EXPECT_FALSE(idle.eta.has_value());
  RebuildSpec spec;
  spec.kind = RebuildKind::kEvacuateDevice;
  spec.device = 2;
  const uint64_t id = scheduler.Submit(spec);
  std::optional<RebuildStats> mid;
  for (int i = 0; i < 400 && !mid; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    RebuildStats now = scheduler.Stats();
    if (now.running == 1 && now.bytes_moved > 0 && now.eta.has_value()) mid = now;
  }
  ASSERT_TRUE(mid.has_value()) << "no progress seen while the job ran";
  EXPECT_GT(mid->last_progress, absl::Now() - absl::Seconds(5));
  EXPECT_GT(*mid->eta, absl::ZeroDuration());
  EXPECT_LT(*mid->eta, absl::Seconds(60));
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  const uint64_t moved = scheduler.Get(id)->bytes_moved;
  RebuildSpec bad;
  bad.kind = RebuildKind::kEvacuateDevice;
  bad.device = 99;
  scheduler.Submit(bad);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  EXPECT_FALSE(scheduler.Get(id).has_value());  // history is 1: forgotten...
  const RebuildStats done = scheduler.Stats();  // ...but counted
  EXPECT_EQ(done.bytes_moved, moved);
  EXPECT_GE(moved, mid->bytes_moved);
  EXPECT_EQ(done.running + done.queued, 0u);
  EXPECT_FALSE(done.eta.has_value());
  using Key = std::pair<RebuildKind, RebuildState>;
  EXPECT_EQ(done.finished,
            (std::map<Key, uint64_t>{{{RebuildKind::kEvacuateDevice, RebuildState::kDone}, 1},
                                     {{RebuildKind::kEvacuateDevice, RebuildState::kFailed}, 1}}));
}

TEST_F(RebuildTest, RepairJobsAndBadDevices) {
  Put("x", RandomBytes(16384, 8));
  RebuildScheduler scheduler(store_.get(), {});
  RebuildSpec bad;
  bad.kind = RebuildKind::kEvacuateDevice;
  bad.device = 99;
  const uint64_t b = scheduler.Submit(bad);
  RebuildSpec repair;
  repair.kind = RebuildKind::kRepairObject;
  repair.object = "x";
  const uint64_t r = scheduler.Submit(repair);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(scheduler.Get(b)->state, RebuildState::kFailed);
  EXPECT_NE(scheduler.Get(b)->error.find("device 99"), std::string::npos);
  EXPECT_EQ(scheduler.Get(r)->state, RebuildState::kDone);
  EXPECT_FALSE(scheduler.Get(12345).has_value());
  EXPECT_EQ(RebuildPriority(RebuildKind::kEvacuateDevice), 0);
  EXPECT_LT(RebuildPriority(RebuildKind::kMediaRange), RebuildPriority(RebuildKind::kRepairObject));
}

}  // namespace
}  // namespace ecd::store
