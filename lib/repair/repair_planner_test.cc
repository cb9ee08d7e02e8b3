// Tests for the repair planner: failed devices and corrupt blocks are repaired with no command,
// most at-risk stripes first; down devices wait for their delay; evacuating a device leaves it
// empty and failed with every object at full redundancy and byte-exact; a media-range job moves
// exactly the blocks that overlap the range; work resumes after a restart; the rate limit holds.
#include "lib/repair/repair_planner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>

#include "lib/fault/fault_namespace.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::repair {

using store::BlockRecord;
using store::BlockStatus;
using store::DeviceState;
using store::DeviceStatus;
using store::EncodeParams;
using store::RandomBytes;
using store::Store;
using store::StoreOptions;
using store::StripeStatus;
using store::TempStoreTest;
using store::VectorSink;
using store::VectorSource;
namespace {

class RepairPlannerTest : public TempStoreTest {
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
  DeviceStatus Device(uint32_t id) { return (*store_->admin().ListDevices())[id]; }

  std::map<std::string, std::vector<uint8_t>> model_;
};

TEST_F(RepairPlannerTest, EvacuationEmptiesTheDeviceAndFailsIt) {
  for (int i = 0; i < 5; ++i) Put("obj" + std::to_string(i), RandomBytes(20 * 16384 + i, i));
  ASSERT_GT(Device(3).blocks, 0u);
  RepairPlanner scheduler(store_.get(), {});
  RebuildSpec spec;
  spec.kind = RebuildKind::kEvacuateDevice;
  spec.device = 3;
  spec.reason = "test";
  const uint64_t id = scheduler.Submit(spec);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  const RebuildJob job = *scheduler.Get(id);
  EXPECT_EQ(job.state, RebuildState::kDone) << job.error;
  EXPECT_GT(job.objects_total, 0u);  // stripes with a block to move
  EXPECT_EQ(job.objects_done, job.objects_total);
  EXPECT_GT(scheduler.Status().bytes_repaired, 0u);
  EXPECT_EQ(Device(3).blocks, 0u);
  EXPECT_EQ(Device(3).record.state, DeviceState::kFailed);
  EXPECT_TRUE(store_->admin().ObjectsOnDevice(3, 0, 0)->empty());
  ExpectAllByteExactAndFullyRedundant();
  // New objects never land on the failed device.
  Put("later", RandomBytes(50000, 77));
  EXPECT_EQ(Device(3).blocks, 0u);
}

TEST_F(RepairPlannerTest, MediaRangeMovesOnlyOverlappingBlocks) {
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
  RepairPlanner scheduler(store_.get(), {});
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
  EXPECT_EQ(scheduler.Status().blocks_repaired, 1u);
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

TEST_F(RepairPlannerTest, FailingDevicesResumeAfterRestart) {
  Put("a", RandomBytes(8 * 16384, 5));
  ASSERT_TRUE(store_->admin().SetDeviceState(5, DeviceState::kFailing).ok());
  EXPECT_FALSE(store_->admin().SetDeviceState(5, DeviceState::kFailing).ok());  // only from online
  Open();  // restart: the state survives in the catalog
  ASSERT_EQ(Device(5).record.state, DeviceState::kFailing);
  VectorSink sink;  // still readable
  ASSERT_TRUE(store_->Read("a", 0, 0, sink).ok());
  RepairPlanner scheduler(store_.get(), {});  // plans from the catalog: no command needed
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(Device(5).record.state, DeviceState::kFailed);
  EXPECT_EQ(Device(5).blocks, 0u);
  ExpectAllByteExactAndFullyRedundant();
}

TEST_F(RepairPlannerTest, RateLimitSpreadsTheWork) {
  Put("big", RandomBytes(64 * 16384, 6));  // 64 stripes x 6 blocks of 4 KiB
  const uint64_t on_device = Device(1).blocks;
  ASSERT_GT(on_device, 20u);
  RepairPlannerOptions o;
  o.rate_bytes_per_sec = on_device * 4096;  // about one second of work at the limit
  RepairPlanner scheduler(store_.get(), o);
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

// Stats: a running evacuation shows the bytes, a recent last progress and an ETA; finished
// jobs are counted by kind and result after history forgets them.
TEST_F(RepairPlannerTest, StatsFollowARunningJobAndCountFinishedOnes) {
  for (int i = 0; i < 4; ++i) Put("obj" + std::to_string(i), RandomBytes(64 * 16384, 20 + i));
  RepairPlannerOptions o;
  o.rate_bytes_per_sec = Device(2).blocks * 4096 / 2;  // about two seconds of work
  o.history = 1;
  o.batch_stripes = 8;
  RepairPlanner scheduler(store_.get(), o);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
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
  EXPECT_EQ(scheduler.Get(id)->state, RebuildState::kDone);
  RebuildSpec bad;
  bad.kind = RebuildKind::kEvacuateDevice;
  bad.device = 99;
  scheduler.Submit(bad);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Seconds(60)));
  EXPECT_FALSE(scheduler.Get(id).has_value());  // history is 1: forgotten...
  const RebuildStats done = scheduler.Stats();  // ...but counted
  EXPECT_GE(done.bytes_moved, mid->bytes_moved);
  EXPECT_EQ(done.running + done.queued, 0u);
  EXPECT_FALSE(done.eta.has_value());
  using Key = std::pair<RebuildKind, RebuildState>;
  EXPECT_EQ(done.finished,
            (std::map<Key, uint64_t>{{{RebuildKind::kEvacuateDevice, RebuildState::kDone}, 1},
                                     {{RebuildKind::kEvacuateDevice, RebuildState::kFailed}, 1}}));
}

TEST_F(RepairPlannerTest, RepairJobsAndBadDevices) {
  Put("x", RandomBytes(16384, 8));
  RepairPlanner scheduler(store_.get(), {});
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

// Every stripe's blocks: healthy count by stripe of every object in the model.
TEST_F(RepairPlannerTest, RepairsAFailedDeviceWithNoCommand) {
  for (int i = 0; i < 6; ++i) Put("obj" + std::to_string(i), RandomBytes(9 * 16384 + 7 * i, i));
  RepairPlanner planner(store_.get(), {});
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  const uint64_t stripes = planner.Status().stripes_by_redundancy.at(2);
  ASSERT_GT(stripes, 0u);
  ASSERT_TRUE(store_->admin().SetDeviceState(4, DeviceState::kFailed).ok());
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  ExpectAllByteExactAndFullyRedundant();
  EXPECT_EQ(Device(4).blocks, 0u);
  const RepairStatus status = planner.Status();
  EXPECT_GT(status.stripes_repaired, 0u);
  EXPECT_EQ(status.stripes_queued, 0u);
  EXPECT_EQ(status.stripes_by_redundancy, (std::vector<uint64_t>{0, 0, stripes}));
}

TEST_F(RepairPlannerTest, StripesWithNoRedundancyLeftGoFirst) {
  for (int i = 0; i < 8; ++i) Put("obj" + std::to_string(i), RandomBytes(12 * 16384, 30 + i));
  RepairPlanner planner(store_.get(), {});
  ASSERT_TRUE(planner.SetPaused(true).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(6, DeviceState::kFailed).ok());
  // Paused: nothing moves, but the census sees the loss.
  for (int i = 0; i < 200; ++i) {
    const std::vector<uint64_t> levels = planner.Status().stripes_by_redundancy;
    if (levels.size() == 3 && levels[0] > 0 && levels[1] > 0) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  RepairStatus paused = planner.Status();
  EXPECT_TRUE(paused.paused);
  EXPECT_EQ(paused.stripes_repaired, 0u);
  ASSERT_GT(paused.stripes_by_redundancy.at(0), 0u);
  ASSERT_GT(paused.stripes_by_redundancy.at(1), 0u);
  ASSERT_TRUE(planner.SetPaused(false).ok());
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  const RepairStatus done = planner.Status();
  ASSERT_EQ(done.repaired_by_redundancy.count(0), 1u);
  ASSERT_EQ(done.repaired_by_redundancy.count(1), 1u);
  EXPECT_LT(done.repaired_by_redundancy.at(0).last_batch,
            done.repaired_by_redundancy.at(1).first_batch);
  EXPECT_EQ(done.repaired_by_redundancy.at(0).stripes, paused.stripes_by_redundancy.at(0));
  ExpectAllByteExactAndFullyRedundant();
}

TEST_F(RepairPlannerTest, PauseAndRateSurviveARestart) {
  {
    RepairPlanner planner(store_.get(), {});
    ASSERT_TRUE(planner.SetPaused(true).ok());
    ASSERT_TRUE(planner.SetRate(12345).ok());
  }
  Open();
  RepairPlanner planner(store_.get(), {});
  EXPECT_TRUE(planner.Status().paused);
  EXPECT_EQ(planner.Status().rate_bytes_per_sec, 12345u);
}

TEST_F(RepairPlannerTest, DownDeviceWaitsForItsDelay) {
  for (int i = 0; i < 4; ++i) Put("obj" + std::to_string(i), RandomBytes(6 * 16384, 50 + i));
  const uint64_t blocks = Device(3).blocks;
  ASSERT_TRUE(store_->admin().MarkDeviceDown(3, "test").ok());
  {
    RepairPlannerOptions o;
    o.repair_delay = absl::Hours(1);
    RepairPlanner planner(store_.get(), o);
    ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
    EXPECT_EQ(planner.Status().stripes_repaired, 0u);
    EXPECT_GT(planner.Status().stripes_waiting, 0u);
    // Reads are served degraded meanwhile.
    for (const auto& [name, data] : model_) EXPECT_EQ(*Get(name), data);
  }
  EXPECT_EQ(Device(3).blocks, blocks);
  EXPECT_EQ(Device(3).record.state, DeviceState::kDown);
  Open();  // a restart keeps the device down, and when it went down
  EXPECT_EQ(Device(3).record.state, DeviceState::kOnline);  // its namespace is back: online
  EXPECT_EQ(Device(3).blocks, blocks);
  ASSERT_TRUE(store_->admin().MarkDeviceDown(3, "test again").ok());
  RepairPlannerOptions o;
  o.repair_delay = absl::ZeroDuration();
  RepairPlanner planner(store_.get(), o);
  for (int i = 0; i < 500 && Device(3).record.state != DeviceState::kFailed; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(Device(3).record.state, DeviceState::kFailed);
  EXPECT_EQ(Device(3).blocks, 0u);
  ExpectAllByteExactAndFullyRedundant();
}

TEST_F(RepairPlannerTest, ACorruptBlockIsHealedAfterOneRead) {
  Put("obj", RandomBytes(4 * 16384, 60));
  RepairPlanner planner(store_.get(), {});
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  auto st = *store_->Stat("obj", /*with_blocks=*/true, false);
  const BlockRecord victim = st.stripes[1].blocks[2].record;
  Clobber(victim, 0x5a);
  VectorSink sink;
  ASSERT_TRUE(store_->Read("obj", 0, 0, sink).ok());  // served rebuilt, block marked corrupt
  EXPECT_EQ(sink.bytes, model_["obj"]);
  EXPECT_EQ(sink.reconstructed, 1u);
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(planner.Status().stripes_repaired, 1u);
  auto after = *store_->Stat("obj", /*with_blocks=*/true, /*verify=*/true);
  EXPECT_EQ(after.degraded_stripes, 0u);
  EXPECT_NE(after.stripes[1].blocks[2].record.lba, victim.lba);  // a new extent
  VectorSink again;
  ASSERT_TRUE(store_->Read("obj", 0, 0, again).ok());
  EXPECT_EQ(again.reconstructed, 0u);
}

TEST_F(RepairPlannerTest, TooManyMissingDevicesAtStartUpChangeNothing) {
  Put("obj", RandomBytes(4 * 16384, 70));
  store_.reset();
  for (int d : {0, 1, 2}) {  // three missing, K is 2
    std::filesystem::rename(dir_ / "devices" / ("nvme" + std::to_string(d) + ".ns"),
                            dir_ / ("moved" + std::to_string(d)));
  }
  StoreOptions o;
  o.data_dir = dir_.string();
  o.device_count = 8;
  o.device_size = 16 << 20;
  o.default_block_size = 4096;
  absl::StatusOr<std::unique_ptr<Store>> refused = Store::Open(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status()));
  EXPECT_NE(refused.status().message().find("device 2"), std::string::npos);
  EXPECT_NE(refused.status().message().find("--start-with-missing-devices"), std::string::npos);
  for (int d : {0, 1, 2}) {
    std::filesystem::rename(dir_ / ("moved" + std::to_string(d)),
                            dir_ / "devices" / ("nvme" + std::to_string(d) + ".ns"));
  }
  Open();
  for (int d = 0; d < 8; ++d) EXPECT_EQ(Device(d).record.state, DeviceState::kOnline) << d;
  EXPECT_EQ(*Get("obj"), model_["obj"]);
}

TEST_F(RepairPlannerTest, ACutShortOrSwappedNamespaceIsNeverHealthy) {
  Put("obj", RandomBytes(4 * 16384, 80));
  store_.reset();
  const auto ns = [&](int d) { return dir_ / "devices" / ("nvme" + std::to_string(d) + ".ns"); };
  std::filesystem::resize_file(ns(5), 1 << 20);  // cut short
  std::filesystem::rename(ns(6), dir_ / "six");  // 6 and 7 swapped
  std::filesystem::rename(ns(7), ns(6));
  std::filesystem::rename(dir_ / "six", ns(7));
  tweak_ = [](StoreOptions& o) { o.start_with_missing_devices = true; };
  Open();
  for (int d : {5, 6, 7}) {
    EXPECT_EQ(Device(d).record.state, DeviceState::kDown) << d;
    EXPECT_FALSE(Device(d).record.down_reason.empty());
  }
  EXPECT_NE(Device(6).record.down_reason.find("device 7"), std::string::npos)
      << Device(6).record.down_reason;
  EXPECT_NE(Device(5).record.down_reason.find("cut short"), std::string::npos)
      << Device(5).record.down_reason;
}

TEST_F(RepairPlannerTest, AVerifyThatFindsABadBlockQueuesItsRepair) {
  Put("obj", RandomBytes(4 * 16384, 61));
  RepairPlanner planner(store_.get(), {});
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  auto st = *store_->Stat("obj", /*with_blocks=*/true, false);
  Clobber(st.stripes[2].blocks[5].record, 0x11);  // a parity block: reads never touch it
  auto verified = store_->Stat("obj", false, /*verify=*/true);
  ASSERT_TRUE(verified.ok());
  EXPECT_EQ(verified->degraded_stripes, 1u);
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(store_->Stat("obj", false, /*verify=*/true)->degraded_stripes, 0u);
  EXPECT_EQ(planner.Status().stripes_repaired, 1u);
}

TEST_F(RepairPlannerTest, AMediaRangeLeftByAStopIsMovedAfterTheRestart) {
  Put("obj", RandomBytes(6 * 16384, 62));
  const auto before = Layout();
  uint64_t lba = 0;
  for (const auto& [key, where] : before) {
    if (where.first == 3) lba = where.second;
  }
  {
    RepairPlanner planner(store_.get(), {});
    ASSERT_TRUE(planner.SetPaused(true).ok());
    RebuildSpec spec;
    spec.kind = RebuildKind::kMediaRange;
    spec.device = 3;
    spec.first_lba = lba;
    spec.lba_count = 1;
    spec.reason = "test";
    planner.Submit(spec);
  }  // stopped before it moved anything (paused)
  Open();
  RepairPlanner planner(store_.get(), {});
  ASSERT_EQ(planner.List().size(), 1u);
  EXPECT_EQ(planner.List()[0].spec.kind, RebuildKind::kMediaRange);
  ASSERT_TRUE(planner.SetPaused(false).ok());
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(planner.List()[0].state, RebuildState::kDone);
  for (const auto& [key, where] : Layout()) {
    EXPECT_FALSE(where.first == 3 && where.second == lba);
  }
  EXPECT_TRUE(store_->admin().MetaWithPrefix("repair/media_range/")->empty());
}

TEST_F(RepairPlannerTest, ADeviceWhoseWritesKeepFailingGoesDownAndIsRepaired) {
  std::shared_ptr<store::FaultRegistry> registry;
  Open(store::FaultInjectingFactory(store::NvmeNamespaceFactory({}), {}, 5, &registry));
  Put("before", RandomBytes(8 * 16384, 63));
  registry->Get(2)->SetRules(*store::ParseFaultSpec("write:eio"));
  RepairPlannerOptions o;
  o.repair_delay = absl::ZeroDuration();
  RepairPlanner planner(store_.get(), o);
  int failed = 0;
  for (int i = 0; i < 20 && Device(2).record.state == DeviceState::kOnline; ++i) {
    EncodeParams p;
    p.name = "try" + std::to_string(i);
    const std::vector<uint8_t> data = RandomBytes(16384, 100 + i);
    VectorSource src(data);
    if (!store_->Encode(p, src).ok()) ++failed;
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GE(failed, 1);
  EXPECT_LE(failed, 8);
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(Device(2).record.state, DeviceState::kFailed);  // down, then failed at once (delay 0)
  EXPECT_EQ(Device(2).blocks, 0u);
  Put("after", RandomBytes(8 * 16384, 64));  // lands on the other devices
  ExpectAllByteExactAndFullyRedundant();
}

TEST_F(RepairPlannerTest, AnEvacuationStopsWhenItsDeviceIsBroughtBackOnline) {
  Put("obj", RandomBytes(6 * 16384, 65));
  RepairPlanner planner(store_.get(), {});
  ASSERT_TRUE(planner.SetPaused(true).ok());
  RebuildSpec spec;
  spec.kind = RebuildKind::kEvacuateDevice;
  spec.device = 2;
  const uint64_t id = planner.Submit(spec);
  EXPECT_EQ(Device(2).record.state, DeviceState::kFailing);
  ASSERT_TRUE(store_->admin().SetDeviceState(2, DeviceState::kOnline).ok());
  ASSERT_TRUE(planner.SetPaused(false).ok());
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(planner.Get(id)->state, RebuildState::kFailed);
  EXPECT_NE(planner.Get(id)->error.find("brought online again"), std::string::npos);
  EXPECT_GT(Device(2).blocks, 0u);  // nothing moved
  EXPECT_EQ(planner.Status().stripes_repaired, 0u);
}

TEST_F(RepairPlannerTest, AStripeWithNowhereToGoDoesNotHoldUpTheOthers) {
  // 6+2 on 8 devices: a lost block has no device outside its stripe. 4+2 has two to spare.
  ASSERT_TRUE(TempStoreTest::Put("wide", RandomBytes(6 * 4096 * 3, 66), 6, 2).ok());
  Put("narrow", RandomBytes(4 * 4096 * 5, 67));
  RepairPlanner planner(store_.get(), {});
  ASSERT_TRUE(store_->admin().SetDeviceState(0, DeviceState::kFailed).ok());
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(store_->Stat("narrow", false, true)->degraded_stripes, 0u);
  EXPECT_EQ(store_->Stat("wide", false, false)->degraded_stripes, 3u);
  const RepairStatus status = planner.Status();
  // It says why: no device is outside the stripe (free space would not help).
  EXPECT_NE(status.stalled.find("of \"wide\" is on every online device (7); add a device or bring "
                                "one back online to move block "),
            std::string::npos)
      << status.stalled;
  EXPECT_EQ(status.stripes_by_redundancy.at(1), 3u);  // the wide stripes, set aside
  // A device back (here: replaced) is a change: the wide stripes are repaired at once.
  ASSERT_TRUE(store_->admin().ReplaceDevice(0).ok());
  ASSERT_TRUE(planner.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(store_->Stat("wide", false, true)->degraded_stripes, 0u);
  EXPECT_TRUE(planner.Status().stalled.empty());
}

TEST_F(RepairPlannerTest, PausedDownDevicesStayDownPastTheirDelay) {
  Put("obj", RandomBytes(6 * 16384, 68));
  RepairPlannerOptions o;
  o.repair_delay = absl::Milliseconds(50);
  RepairPlanner planner(store_.get(), o);
  ASSERT_TRUE(planner.SetPaused(true).ok());
  ASSERT_TRUE(store_->admin().MarkDeviceDown(1, "maintenance").ok());
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(Device(1).record.state, DeviceState::kDown);  // noout: not failed while paused
  ASSERT_TRUE(planner.SetPaused(false).ok());
  for (int i = 0; i < 500 && Device(1).record.state != DeviceState::kFailed; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Device(1).record.state, DeviceState::kFailed);
}

TEST_F(RepairPlannerTest, ADeviceDownForItsWritesStaysDownAfterARestart) {
  Put("obj", RandomBytes(6 * 16384, 69));
  ASSERT_TRUE(store_->admin().MarkDeviceDown(4, "5 writes in a row failed").ok());
  Open();
  EXPECT_EQ(Device(4).record.state, DeviceState::kDown);
  ASSERT_TRUE(store_->admin().MarkDeviceDown(5, "could not be opened").ok());
  Open();
  EXPECT_EQ(Device(5).record.state, DeviceState::kOnline);  // it opens: it came back
  EXPECT_EQ(Device(4).record.state, DeviceState::kDown);
}

}  // namespace
}  // namespace ecd::repair
