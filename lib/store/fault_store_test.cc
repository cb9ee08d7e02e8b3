// Tests a store whose devices misbehave (lib/fault's FaultInjectingFactory): degraded reads, and
// encodes, updates and recovers that fail cleanly (nothing stored, no space held, the old version
// whole) or complete, never losing what was acknowledged.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/fault/fault_namespace.h"
#include "lib/fault/fault_test_util.h"
#include "lib/store/catalog_rebuild.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

// A store of 8 devices (TempStoreTest) whose namespaces go through FaultInjectingFactory.
class FaultStoreTest : public TempStoreTest {
 protected:
  void OpenWithFaults(std::map<uint32_t, std::vector<FaultRule>> rules) {
    Open(FaultInjectingFactory(NvmeNamespaceFactory({}), std::move(rules), 99, &registry_));
  }
  // Encode fails cleanly: an error, no object, no space used; then works without the fault.
  void ExpectEncodeFailsCleanly(uint32_t device, absl::StatusCode code) {
    const uint64_t free_before = TotalFree();
    const auto data = RandomBytes(100000, 5);  // 7 stripes of 6 blocks: every device is used.
    auto o = Put("doomed", data);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), code) << o.status();
    EXPECT_EQ(store_->Stat("doomed", false, false).status().code(), absl::StatusCode::kNotFound);
    auto listed = ListAll(*store_);
    ASSERT_TRUE(listed.ok());
    EXPECT_TRUE(listed->empty());
    EXPECT_EQ(TotalFree(), free_before);

    registry_->SetRules(device, {});
    auto ok = Put("doomed", data);
    ASSERT_TRUE(ok.ok()) << ok.status();
    VectorSink sink;
    ASSERT_TRUE(store_->Read("doomed", 0, 0, sink).ok());
    EXPECT_EQ(sink.bytes, data);
    EXPECT_LT(TotalFree(), free_before);
  }

  std::shared_ptr<FaultRegistry> registry_;
};

TEST_F(FaultStoreTest, ReadsAreDegradedButExactWhenADeviceFailsEveryRead) {
  OpenWithFaults({});
  std::vector<std::vector<uint8_t>> objects;
  for (uint32_t i = 0; i < 4; ++i) {
    objects.push_back(RandomBytes(50000 + 777 * i, 100 + i));
    ASSERT_TRUE(Put(absl::StrCat("o", i), objects.back()).ok());
  }
  // Every read fails from now on. (At an open, the label would not read: the device is down.)
  registry_->Get(2)->SetRules(Rules("read:eio"));
  uint32_t reconstructed = 0;
  for (uint32_t i = 0; i < objects.size(); ++i) {
    VectorSink sink;
    absl::Status s = store_->Read(absl::StrCat("o", i), 0, 0, sink);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(sink.bytes, objects[i]);
    reconstructed += sink.reconstructed;
  }
  EXPECT_GT(reconstructed, 0u);
  ASSERT_NE(registry_->Get(2), nullptr);
  EXPECT_GT(CounterOf(*registry_->Get(2), "fault_injected_eio"), 0u);
  EXPECT_EQ(CounterOf(*registry_->Get(3), "fault_injected_eio"), 0u);
  // The counters reach `ecctl device ls` through ListDevices.
  auto devices = store_->admin().ListDevices();
  ASSERT_TRUE(devices.ok());
  bool exported = false;
  for (const auto& [name, v] : (*devices)[2].counters) exported |= name == "fault_injected_eio";
  EXPECT_TRUE(exported);
}

// The writes of rebuilt blocks are asynchronous; one that fails must still fail the recover,
// commit nothing of its batch and leak no space, whichever stripe it belonged to.
TEST_F(FaultStoreTest, ARecoverWhoseRebuiltBlockWriteFailsCommitsNothing) {
  OpenWithFaults({});
  const auto data = RandomBytes(40 * 16384, 31);
  ASSERT_TRUE(Put("r", data).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  auto on_device_1 = [&] {
    auto st = store_->Stat("r", true, false);
    EXPECT_TRUE(st.ok());
    uint64_t n = 0;
    for (const auto& s : st->stripes) {
      for (const auto& b : s.blocks) n += b.record.device == 1;
    }
    return n;
  };
  const uint64_t lost = on_device_1();
  ASSERT_GT(lost, 4u);
  const uint64_t free_before = TotalFree();
  for (bool missing_only : {true, false}) {
    // Every device takes the first writes, then fails them: some stripes' writes land, a
    // later one's do not.
    for (uint32_t d = 0; d < 8; ++d) {
      if (d != 1) registry_->SetRules(d, Rules("write:eio:after=1"));
    }
    RecoverOptions options;
    options.check_all = !missing_only;
    auto p = store_->Recover("r", nullptr, options);
    EXPECT_TRUE(absl::IsUnavailable(p.status()))
        << "missing_only " << missing_only << ": " << p.status();
    EXPECT_EQ(TotalFree(), free_before) << "missing_only " << missing_only;
    EXPECT_EQ(on_device_1(), lost) << "missing_only " << missing_only;
  }
  for (uint32_t d = 0; d < 8; ++d) registry_->SetRules(d, {});
  RecoverOptions options;
  options.check_all = false;
  auto p = store_->Recover("r", nullptr, options);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->blocks_rebuilt, lost);
  EXPECT_EQ(on_device_1(), 0u);
  VectorSink sink;
  ASSERT_TRUE(store_->Read("r", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
  EXPECT_EQ(sink.reconstructed, 0u);
}

TEST_F(FaultStoreTest, WriteEioFailsTheEncodeCleanly) {
  OpenWithFaults({});
  registry_->SetRules(3, Rules("write:eio"));
  ExpectEncodeFailsCleanly(3, absl::StatusCode::kDataLoss);
}

TEST_F(FaultStoreTest, TornWriteFailsTheEncodeCleanly) {
  OpenWithFaults({});
  registry_->SetRules(5, Rules("write:torn:sector=512"));
  ExpectEncodeFailsCleanly(5, absl::StatusCode::kDataLoss);
}

// A device that cannot write its block records at a start does not stop the start: it is
// failing (it takes no new blocks), the others serve, and bringing it online again gives it
// its record log back.
TEST_F(FaultStoreTest, ADeviceThatCannotWriteAtAStartIsFailingAndTheOthersServe) {
  OpenWithFaults({{3, Rules("write:eio")}});
  auto devices = store_->admin().ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[3].record.state, DeviceState::kFailing);
  const auto data = RandomBytes(100000, 8);
  auto o = Put("x", data);
  ASSERT_TRUE(o.ok()) << o.status();
  auto st = store_->Stat("x", /*with_blocks=*/true, /*verify=*/true);
  ASSERT_TRUE(st.ok());
  for (const auto& stripe : st->stripes) {
    for (const auto& b : stripe.blocks) EXPECT_NE(b.record.device, 3u);
  }
  registry_->SetRules(3, {});
  auto online = store_->admin().SetDeviceState(3, DeviceState::kOnline);
  ASSERT_TRUE(online.ok()) << online.status();
  VectorSink sink;
  ASSERT_TRUE(store_->Read("x", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
  ASSERT_TRUE(Put("y", RandomBytes(100000, 9)).ok());  // 7 stripes of 6: device 3 has blocks.
  store_.reset();
  CatalogToolOptions tool;
  tool.data_dir = dir_.string();
  absl::StatusOr<CheckReport> check = CheckCatalog(tool);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->differences.empty()) << absl::StrJoin(check->differences, "\n");
}

TEST_F(FaultStoreTest, FlushFailureFailsTheEncodeAndMakesTheDeviceSuspect) {
  OpenWithFaults({});
  registry_->SetRules(1, Rules("flush:eio"));
  std::vector<std::pair<uint32_t, std::string>> suspects;
  store_->admin().SetSuspectListener(
      [&](uint32_t device, const std::string& reason) { suspects.emplace_back(device, reason); });
  const uint64_t free_before = TotalFree();
  const auto data = RandomBytes(100000, 6);
  auto o = Put("x", data);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kUnavailable) << o.status();
  EXPECT_TRUE(absl::StrContains(o.status().message(), "device 1")) << o.status();
  EXPECT_EQ(TotalFree(), free_before);
  EXPECT_EQ(store_->Stat("x", false, false).status().code(), absl::StatusCode::kNotFound);
  // The device is suspect: failing (persisted), told to the listener once, and given no new
  // blocks, so the failed flush is never retried into a success on it.
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].first, 1u);
  EXPECT_TRUE(absl::StrContains(suspects[0].second, "flush failed")) << suspects[0].second;
  auto devices = store_->admin().ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[1].record.state, DeviceState::kFailing);
  auto ok = Put("x", data);  // The retry goes to the 7 other devices.
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto st = store_->Stat("x", /*with_blocks=*/true, /*verify=*/true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 0u);
  for (const auto& stripe : st->stripes) {
    for (const auto& b : stripe.blocks) EXPECT_NE(b.record.device, 1u);
  }
  VectorSink sink;
  ASSERT_TRUE(store_->Read("x", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
  EXPECT_EQ(suspects.size(), 1u);
  // A restart keeps it failing; failing and reopening the device (a replacement) brings a
  // fresh namespace that flushes again.
  Open();
  devices = store_->admin().ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[1].record.state, DeviceState::kFailing);
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  registry_->SetRules(1, {});
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kOnline).ok());
  ASSERT_TRUE(Put("y", data).ok());
}

// With StoreOptions::flush_bytes, a flush that fails on the way fails the encode there, as the
// last one would: nothing stored, no space held, the device suspect.
TEST_F(FaultStoreTest, AFlushOnTheWayThatFailsFailsTheEncode) {
  tweak_ = [](StoreOptions& o) { o.flush_bytes = 2 * 6 * 4096; };  // Every 2 stripes of 4 + 2.
  OpenWithFaults({{1, Rules("flush:eio:after=1")}});               // Its second flush fails.
  const uint64_t free_before = TotalFree();
  const auto data = RandomBytes(40 * 16384, 23);  // 40 stripes: 240 block writes in all.
  const auto writes = [&] {
    return CounterSum(*store_->admin().ListDevices(), "nvme_write_commands");
  };
  const uint64_t writes_before = writes();
  auto o = Put("x", data);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kUnavailable) << o.status();
  EXPECT_TRUE(absl::StrContains(o.status().message(), "device 1")) << o.status();
  // It stopped on the way: well before the 240 writes of the whole object.
  EXPECT_LT(writes() - writes_before, 120u);
  EXPECT_EQ(TotalFree(), free_before);
  EXPECT_EQ(store_->Stat("x", false, false).status().code(), absl::StatusCode::kNotFound);
  auto devices = store_->admin().ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[1].record.state, DeviceState::kFailing);
}

// The same for an update: it fails on the way and leaves the old version whole, no space held.
TEST_F(FaultStoreTest, AFlushOnTheWayThatFailsFailsTheUpdateAndKeepsTheOldVersion) {
  tweak_ = [](StoreOptions& o) { o.flush_bytes = 2 * 6 * 4096; };  // Every 2 stripes of 4 + 2.
  OpenWithFaults({});
  const auto data = RandomBytes(40 * 16384, 24);
  ASSERT_TRUE(Put("x", data).ok());
  const uint64_t free_before = TotalFree();
  registry_->SetRules(1, Rules("flush:eio:after=1"));  // Its second flush from now on fails.
  const auto writes = [&] {
    return CounterSum(*store_->admin().ListDevices(), "nvme_write_commands");
  };
  const uint64_t writes_before = writes();
  const auto patch = RandomBytes(data.size(), 25);  // Every stripe, whole: 240 block writes.
  VectorSource source(patch);
  auto r = store_->Update("x", 0, source, false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "device 1")) << r.status();
  EXPECT_LT(writes() - writes_before, 120u);  // It stopped on the way.
  EXPECT_EQ(TotalFree(), free_before);
  auto st = store_->Stat("x", false, false);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->object.version, 1u);
  VectorSink sink;
  ASSERT_TRUE(store_->Read("x", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
}

// Updates (the store's riskiest write) under faults on one device: each fails cleanly, leaving
// the old version whole and no space held, or completes (degraded); nothing acknowledged is lost.
TEST_F(FaultStoreTest, UpdateWithATornOrFailedWriteLeavesTheOldVersionWhole) {
  OpenWithFaults({});
  const auto data = RandomBytes(6 * 4 * 4096, 11);  // 6 stripes of 4+2: every device is used
  ASSERT_TRUE(Put("o", data).ok());
  const uint64_t free_before = TotalFree();
  for (const char* spec : {"write:torn:sector=512", "write:eio", "write:short"}) {
    SCOPED_TRACE(spec);
    for (uint32_t d = 0; d < 8; ++d) registry_->SetRules(d, Rules(spec));
    const std::vector<uint8_t> patch(3 * 4096 + 100, 0xab);
    VectorSource src(patch);
    auto r = store_->Update("o", 5000, src, /*append=*/false);
    ASSERT_FALSE(r.ok());
    for (uint32_t d = 0; d < 8; ++d) registry_->SetRules(d, {});
    auto st = store_->Stat("o", false, /*verify=*/true);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->object.version, 1u);
    EXPECT_EQ(st->degraded_stripes, 0u);
    EXPECT_EQ(Get("o").value(), data);
    EXPECT_EQ(TotalFree(), free_before);
  }
}

TEST_F(FaultStoreTest, RandomFaultsNeverLoseAnAcknowledgedUpdate) {
  // Device 2 fails a third of its reads, device 5 a fifth of its writes (torn or EIO).
  OpenWithFaults({});
  std::vector<uint8_t> model = RandomBytes(8 * 4 * 4096 + 777, 12);
  ASSERT_TRUE(Put("o", model).ok());
  registry_->SetRules(2, Rules("read:eio:p=0.33"));
  registry_->SetRules(5, Rules("write:eio:p=0.1;write:torn:sector=512:p=0.1"));
  std::mt19937 rng(13);
  int acknowledged = 0, refused = 0;
  uint64_t version = 1;
  for (int i = 0; i < 60; ++i) {
    const size_t offset = rng() % model.size();
    const size_t n = 1 + rng() % std::min<size_t>(model.size() - offset, 20000);
    const std::vector<uint8_t> patch = RandomBytes(n, 100 + i);
    VectorSource src(patch);
    auto r = store_->Update("o", offset, src, /*append=*/false);
    if (r.ok()) {
      ++acknowledged;
      std::copy(patch.begin(), patch.end(), model.begin() + static_cast<long>(offset));
      EXPECT_EQ(r->object.version, ++version);
    } else {
      ++refused;
    }
    VectorSink sink;  // Every read, degraded or not, is the last acknowledged version.
    ASSERT_TRUE(store_->Read("o", 0, 0, sink).ok());
    ASSERT_EQ(sink.bytes, model) << "after update " << i;
  }
  EXPECT_GT(acknowledged, 10);
  EXPECT_GT(refused, 0);
  registry_->SetRules(2, {});
  registry_->SetRules(5, {});
  // Without the faults: byte-exact, and every stripe's parity matches its data.
  EXPECT_EQ(Get("o").value(), model);
  auto found =
      store_->Recover("o", nullptr, RecoverOptions{.verify_parity = true, .repair = false});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->parity_mismatches, 0u);
  EXPECT_EQ(found->blocks_corrupt, 0u);
  EXPECT_EQ(found->lost_stripes, 0u);
}

}  // namespace
}  // namespace ecd::store
