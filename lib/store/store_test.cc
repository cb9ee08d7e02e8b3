// Tests the store end to end on temporary namespace files: encode and read back, placement,
// degraded reads, corruption, recover, restart, every refusal, and waits for an object's lock
// that end with the caller's deadline or cancellation.
#include "lib/store/store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

using StoreTest = TempStoreTest;

TEST_F(StoreTest, RoundTripsEverySizeAndRange) {
  for (size_t size : {0ul, 1ul, 4095ul, 4096ul, 16384ul, 16385ul, 100000ul}) {
    const auto data = RandomBytes(size, static_cast<uint32_t>(size));
    const std::string name = "obj" + std::to_string(size);
    auto o = Put(name, data);
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->size, size);
    EXPECT_EQ(o->stripe_count, (size + 16383) / 16384);
    auto back = Get(name);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, data) << size;
  }
  const auto data = RandomBytes(100000, 100000);
  for (auto [off, len] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 1}, {4095, 2}, {16383, 3}, {5000, 40000}, {99999, 1}, {99000, 5000}, {100000, 0}}) {
    auto part = Get("obj100000", off, len);
    ASSERT_TRUE(part.ok()) << part.status();
    const uint64_t end = len == 0 ? data.size() : std::min<uint64_t>(data.size(), off + len);
    EXPECT_EQ(*part, std::vector<uint8_t>(data.begin() + static_cast<long>(off),
                                          data.begin() + static_cast<long>(end)))
        << off << "+" << len;
  }
  EXPECT_TRUE(absl::IsOutOfRange(Get("obj100000", 100001, 1).status()));
}

TEST_F(StoreTest, EveryBlockMovesAsNvmeCommandsInPlace) {
  auto before = *store_->admin().ListDevices();
  const auto data = RandomBytes(10 * 16384, 9);  // 10 stripes of 4 + 2 blocks of 4 KiB
  ASSERT_TRUE(Put("nvme", data).ok());
  auto after = *store_->admin().ListDevices();
  EXPECT_GE(CounterSum(after, "nvme_write_commands") - CounterSum(before, "nvme_write_commands"),
            60u);
  EXPECT_GE(CounterSum(after, "nvme_bytes_written") - CounterSum(before, "nvme_bytes_written"),
            60u * 4096);
  EXPECT_GT(CounterSum(after, "nvme_flush_commands"), CounterSum(before, "nvme_flush_commands"));
  auto back = Get("nvme");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
  auto read = *store_->admin().ListDevices();
  EXPECT_GE(CounterSum(read, "nvme_bytes_read") - CounterSum(after, "nvme_bytes_read"), 40u * 4096);
  EXPECT_EQ(CounterSum(read, "nvme_in_flight"), 0u);
  // Every block moved in place, none through the devices' pools.
  EXPECT_GE(
      CounterSum(read, "nvme_zero_copy_commands") - CounterSum(before, "nvme_zero_copy_commands"),
      100u);
  // Only the block-record pages (one per device written) went through the pools.
  EXPECT_LE(CounterSum(read, "nvme_staged_commands") - CounterSum(before, "nvme_staged_commands"),
            8u);
  // The stripe buffers are runs of the DMA arena, which every device registered as fixed buffers.
  EXPECT_EQ(store_->Stats().arena.bytes, 32u << 20);
  EXPECT_GE(CounterSum(read, "nvme_io_uring_fixed_ops"), 100u);
  EXPECT_EQ(CounterSum(read, "nvme_io_uring_plain_ops"), 0u);
  for (const auto& d : read) {
    for (const auto& [n, v] : d.counters)
      EXPECT_EQ(n.rfind("nvme_errors", 0), std::string::npos) << n;
  }
}

// StoreOptions::flush_bytes: an encode and an update flush the devices they wrote to each time
// they have written that much more, besides the flush before the commit; 0 flushes once.
TEST_F(StoreTest, FlushBytesFlushesEncodesAndUpdatesAsTheyGo) {
  // 4 + 2 blocks of 4 KiB: 24 KiB written per stripe, 12 stripes.
  const auto data = RandomBytes(12 * 16384, 21);
  const auto flushes = [&] {
    return CounterSum(*store_->admin().ListDevices(), "nvme_flush_commands");
  };
  uint64_t before = flushes();
  ASSERT_TRUE(Put("once", data).ok());
  const uint64_t once = flushes() - before;
  EXPECT_GE(once, 6u);  // Each device written to, once: at least the 6 of a stripe, at most 8.
  EXPECT_LE(once, 8u);

  tweak_ = [](StoreOptions& o) { o.flush_bytes = 2 * 6 * 4096; };  // Every 2 stripes.
  Open();
  before = flushes();
  ASSERT_TRUE(Put("paced", data).ok());
  // Flushes after stripes 2, 4, ..., 12 and before the commit: 7 rounds, each of at least the
  // 6 devices of one stripe and at most all 8.
  const uint64_t paced = flushes() - before;
  EXPECT_GE(paced, 7u * 6);
  EXPECT_LE(paced, 7u * 8);
  EXPECT_EQ(*Get("paced"), data);

  // An update of 6 whole stripes (from stripe 3 on) writes 6 x 24 KiB: flushes after its
  // stripes 2, 4 and 6, and before its commit.
  const auto patch = RandomBytes(6 * 16384, 22);
  auto model = data;
  std::copy(patch.begin(), patch.end(), model.begin() + 3 * 16384);
  before = flushes();
  VectorSource src(patch);
  ASSERT_TRUE(store_->Update("paced", 3 * 16384, src, false).ok());
  const uint64_t update = flushes() - before;
  EXPECT_GE(update, 4u * 6);
  EXPECT_LE(update, 4u * 8);
  EXPECT_EQ(*Get("paced"), model);
  EXPECT_EQ(*Get("once"), data);
}

TEST_F(StoreTest, BlocksOfAStripeAreOnDistinctDevicesAndSpread) {
  const auto data = RandomBytes(40 * 16384, 3);
  auto o = Put("spread", data);
  ASSERT_TRUE(o.ok()) << o.status();
  auto st = store_->Stat("spread", true, false);
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->stripes.size(), 40u);
  std::vector<int> per_device(8, 0);
  for (const auto& s : st->stripes) {
    std::set<uint32_t> devices;
    ASSERT_EQ(s.blocks.size(), 6u);
    for (const auto& b : s.blocks) {
      devices.insert(b.record.device);
      ++per_device[b.record.device];
    }
    EXPECT_EQ(devices.size(), 6u);
    EXPECT_EQ(s.healthy_blocks, 6u);
  }
  for (int n : per_device) EXPECT_EQ(n, 30);  // 240 blocks over 8 devices, rotating.
}

// Totals and Damage agree with what a full listing measures, through encodes, an append, a
// delete, failed devices, a corrupt block and a restart.
TEST_F(StoreTest, KeptTotalsAndDamageMatchAFullListing) {
  const auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    absl::StatusOr<std::vector<ObjectStatus>> all = ListAll(*store_);
    ASSERT_TRUE(all.ok()) << all.status();
    ObjectTotals want;
    DamageTotals damage;
    for (const ObjectStatus& o : *all) {
      ++want.objects;
      want.bytes += o.object.size;
      damage.degraded_stripes += o.degraded_stripes;
      damage.lost_stripes += o.lost_stripes;
      damage.degraded_objects += o.degraded_stripes > 0 ? 1 : 0;
    }
    EXPECT_EQ(store_->Totals().objects, want.objects);
    EXPECT_EQ(store_->Totals().bytes, want.bytes);
    absl::StatusOr<DamageTotals> got = store_->Damage();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->degraded_stripes, damage.degraded_stripes);
    EXPECT_EQ(got->lost_stripes, damage.lost_stripes);
    EXPECT_EQ(got->degraded_objects, damage.degraded_objects);
  };
  ASSERT_TRUE(Put("a", RandomBytes(5 * 16384 + 3, 1)).ok());
  ASSERT_TRUE(Put("b/c", RandomBytes(100, 2), 2, 1).ok());
  ASSERT_TRUE(Put("e", {}).ok());
  check("encoded");
  const auto more = RandomBytes(40000, 3);
  VectorSource src(more);
  ASSERT_TRUE(store_->Update("b/c", 100, src, /*append=*/true).ok());
  ASSERT_TRUE(store_->Delete("e").ok());
  check("appended and deleted");
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(4, DeviceState::kFailed).ok());
  check("two devices failed");
  absl::StatusOr<ObjectStatus> st = store_->Stat("a", /*with_blocks=*/true, false);
  ASSERT_TRUE(st.ok());
  for (const StripeStatus& stripe : st->stripes) {
    for (const BlockStatus& b : stripe.blocks) {
      if (b.healthy) {
        Clobber(b.record, 0xAB);
        break;
      }
    }
  }
  ASSERT_TRUE(store_->Stat("a", false, /*verify=*/true).ok());  // marks the clobbered corrupt
  check("a corrupt block in every stripe of a");
  EXPECT_GT(store_->Damage()->lost_stripes, 0u);
  Open();
  check("reopened");
}

TEST_F(StoreTest, DegradedReadsAndDataLoss) {
  const auto data = RandomBytes(10 * 16384 + 77, 4);
  ASSERT_TRUE(Put("d", data).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(0, DeviceState::kFailed).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(5, DeviceState::kFailed).ok());
  uint32_t reconstructed = 0;
  auto back = Get("d", 0, 0, &reconstructed);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
  EXPECT_GT(reconstructed, 0u);
  auto st = store_->Stat("d", false, false);
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->degraded_stripes, 0u);
  EXPECT_EQ(st->lost_stripes, 0u);

  ASSERT_TRUE(store_->admin().SetDeviceState(2, DeviceState::kFailed).ok());
  VectorSink sink;
  absl::Status s = store_->Read("d", 0, 0, sink);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  // Whatever was served before the loss is a correct prefix: never wrong bytes.
  ASSERT_LE(sink.bytes.size(), data.size());
  EXPECT_TRUE(std::equal(sink.bytes.begin(), sink.bytes.end(), data.begin()));
  st = store_->Stat("d", false, false);
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->lost_stripes, 0u);
  EXPECT_TRUE(absl::IsDataLoss(store_->Recover("d", nullptr).status()));
}

TEST_F(StoreTest, CorruptBlocksAreNeverServedAndRecoverRebuildsThem) {
  const auto data = RandomBytes(8 * 16384, 5);
  ASSERT_TRUE(Put("c", data).ok());
  auto st = store_->Stat("c", true, false);
  ASSERT_TRUE(st.ok());
  Clobber(st->stripes[1].blocks[0].record, 0xAA);  // Data block.
  Clobber(st->stripes[3].blocks[5].record, 0x55);  // Parity block.
  Clobber(st->stripes[6].blocks[2].record, 0x00);
  Clobber(st->stripes[6].blocks[4].record, 0x00);  // Two in one stripe: K = 2 still decodes.

  auto back = Get("c");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
  auto verified = store_->Stat("c", false, true);
  ASSERT_TRUE(verified.ok());
  EXPECT_EQ(verified->degraded_stripes, 3u);

  const uint64_t free_before = TotalFree();
  auto p = store_->Recover("c", nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->stripes_done, 8u);
  EXPECT_EQ(p->blocks_checked, 48u);
  EXPECT_EQ(p->blocks_rebuilt, 4u);
  EXPECT_EQ(TotalFree(), free_before);  // Old extents freed, new ones used.
  auto after = store_->Stat("c", false, true);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->degraded_stripes, 0u);
  back = Get("c");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

TEST_F(StoreTest, GetBlockExportsStoredBytesAndRebuildsBadOnes) {
  const auto data = RandomBytes(3 * 16384, 12);
  ASSERT_TRUE(Put("g", data).ok());
  VectorSink block;
  ASSERT_TRUE(store_->GetBlock("g", 1, 2, block).ok());
  EXPECT_EQ(block.bytes,
            std::vector<uint8_t>(data.begin() + 16384 + 2 * 4096, data.begin() + 16384 + 3 * 4096));
  EXPECT_EQ(block.reconstructed, 0u);
  VectorSink parity;
  ASSERT_TRUE(store_->GetBlock("g", 1, 5, parity).ok());
  auto st = store_->Stat("g", true, false);
  ASSERT_TRUE(st.ok());
  Clobber(st->stripes[1].blocks[5].record, 0x99);
  VectorSink rebuilt;
  ASSERT_TRUE(store_->GetBlock("g", 1, 5, rebuilt).ok());
  EXPECT_EQ(rebuilt.bytes, parity.bytes);
  EXPECT_EQ(rebuilt.reconstructed, 1u);
  VectorSink none;
  EXPECT_TRUE(absl::IsOutOfRange(store_->GetBlock("g", 3, 0, none)));
  EXPECT_TRUE(absl::IsOutOfRange(store_->GetBlock("g", 0, 6, none)));
  EXPECT_TRUE(absl::IsNotFound(store_->GetBlock("nope", 0, 0, none)));
}

TEST_F(StoreTest, BlocksFlaggedByATransientErrorAreTriedAgain) {
  const auto data = RandomBytes(16384, 13);
  ASSERT_TRUE(Put("t", data).ok());
  auto st = store_->Stat("t", true, false);
  ASSERT_TRUE(st.ok());
  std::vector<std::vector<uint8_t>> saved;
  for (int i : {0, 1, 2}) {
    saved.push_back(Snapshot(st->stripes[0].blocks[i].record));
    Clobber(st->stripes[0].blocks[i].record, 0x77);
  }
  EXPECT_TRUE(absl::IsDataLoss(Get("t").status()));    // 3 > K bad: all three flagged corrupt.
  Restore(st->stripes[0].blocks[0].record, saved[0]);  // The "transient" fault goes away.
  Restore(st->stripes[0].blocks[1].record, saved[1]);
  auto back = Get("t");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

TEST_F(StoreTest, RecoverNeverPutsTwoBlocksOfAStripeOnOneDevice) {
  const auto data = RandomBytes(24 * 16384, 14);
  ASSERT_TRUE(Put("p", data).ok());
  auto st = store_->Stat("p", true, false);
  ASSERT_TRUE(st.ok());
  // Device 1 fails and every block on device 2 is corrupt at the same time.
  for (const auto& s : st->stripes) {
    for (const auto& b : s.blocks) {
      if (b.record.device == 2) Clobber(b.record, 0x12);
    }
  }
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  auto p = store_->Recover("p", nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  auto after = store_->Stat("p", true, true);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->degraded_stripes, 0u);
  for (const auto& s : after->stripes) {
    std::set<uint32_t> devices;
    for (const auto& b : s.blocks) devices.insert(b.record.device);
    EXPECT_EQ(devices.size(), 6u) << "stripe " << s.index;
  }
}

TEST_F(StoreTest, RefusesADifferentLbaSizeForExistingDevices) {
  store_.reset();
  StoreOptions o;
  o.data_dir = dir_.string();
  o.device_size = 16 << 20;
  o.lba_size = 8192;
  EXPECT_TRUE(absl::IsFailedPrecondition(Store::Open(o).status()));
}

TEST_F(StoreTest, AReplacedDeviceIsReopenedAndRefilled) {
  const auto data = RandomBytes(10 * 16384, 15);
  ASSERT_TRUE(Put("r", data).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(3, DeviceState::kFailed).ok());
  std::filesystem::remove(dir_ / "devices" / "nvme3.ns");  // The operator swaps the disk.
  // A blank namespace is never taken for the old one...
  EXPECT_TRUE(
      absl::IsFailedPrecondition(store_->admin().SetDeviceState(3, DeviceState::kOnline).status()));
  // ...but replaces it when the operator says so.
  ASSERT_TRUE(store_->admin().ReplaceDevice(3).ok());
  ASSERT_TRUE(std::filesystem::exists(dir_ / "devices" / "nvme3.ns"));
  EXPECT_TRUE(absl::IsFailedPrecondition(store_->admin().ReplaceDevice(3).status()));  // online now
  auto back = Get("r");  // Device 3's blocks are blank now: marked corrupt, rebuilt to serve.
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
  auto p = store_->Recover("r", nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->blocks_rebuilt, 0u);
  Open();  // The rebuilt blocks are in the new file, not in the deleted one.
  auto st = store_->Stat("r", false, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 0u);
  back = Get("r");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

TEST_F(StoreTest, RecoverMovesBlocksOffFailedDevices) {
  const auto data = RandomBytes(20 * 16384, 6);
  ASSERT_TRUE(Put("f", data).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(4, DeviceState::kFailed).ok());
  auto p = store_->Recover("f", nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->blocks_rebuilt, 30u);  // 120 blocks, 2 of 8 devices: 15 each.
  auto st = store_->Stat("f", true, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 0u);
  for (const auto& s : st->stripes) {
    std::set<uint32_t> devices;
    for (const auto& b : s.blocks) {
      EXPECT_NE(b.record.device, 1u);
      EXPECT_NE(b.record.device, 4u);
      devices.insert(b.record.device);
    }
    EXPECT_EQ(devices.size(), 6u);
  }
  auto devices = store_->admin().ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[1].blocks, 0u);
  EXPECT_EQ((*devices)[1].used_bytes, (*devices)[1].metadata_bytes);  // its label and record log
  EXPECT_EQ((*devices)[1].metadata_bytes, 4096u + 128u * 4096u);
  auto back = Get("f");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

// Bytes each device has read so far (nvme_bytes_read; 0 for a failed device).
std::map<uint32_t, uint64_t> BytesRead(Store& store) {
  std::map<uint32_t, uint64_t> out;
  auto devices = store.admin().ListDevices();
  EXPECT_TRUE(devices.ok());
  for (const DeviceStatus& d : *devices) {
    for (const auto& [name, value] : d.counters) {
      if (name == "nvme_bytes_read") out[d.record.id] = value;
    }
  }
  return out;
}

// Whether stripe `s` has a block on `device`.
bool HasBlockOn(const StripeStatus& s, uint32_t device) {
  return std::any_of(s.blocks.begin(), s.blocks.end(),
                     [device](const auto& b) { return b.record.device == device; });
}

RecoverOptions MissingOnly() {
  RecoverOptions o;
  o.check_all = false;
  return o;
}

// A rebuild of a failed device reads, of each stripe with a block there, the first M good
// blocks by index (data first), and nothing of the other stripes.
TEST_F(StoreTest, MissingOnlyRecoverReadsMBlocksDataFirst) {
  const auto data = RandomBytes(20 * 16384, 21);
  ASSERT_TRUE(Put("m", data).ok());
  auto st = store_->Stat("m", true, false);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  std::map<uint32_t, uint64_t> expected;  // Bytes each device should read.
  uint64_t lost = 0, affected = 0, parity_reads = 0;
  for (const auto& s : st->stripes) {
    int picked = 0;
    if (!HasBlockOn(s, 1)) continue;
    ++affected;
    for (const auto& b : s.blocks) {
      if (b.record.device == 1) {
        ++lost;
      } else if (picked < 4) {
        ++picked;
        expected[b.record.device] += b.record.lba_count * 4096;
        if (b.record.index >= 4) ++parity_reads;
      }
    }
  }
  ASSERT_GT(affected, 0u);
  ASSERT_LT(affected, 20u);  // Some stripes have no block on device 1: they are not read.
  ASSERT_GT(parity_reads, 0u);
  const auto before = BytesRead(*store_);
  auto p = store_->Recover("m", nullptr, MissingOnly());
  ASSERT_TRUE(p.ok()) << p.status();
  const auto after = BytesRead(*store_);
  EXPECT_EQ(p->stripes_done, 20u);
  EXPECT_EQ(p->blocks_checked, 4 * affected);
  EXPECT_EQ(p->bytes_checked, 4 * affected * 4096);
  EXPECT_EQ(p->blocks_unreadable, lost);
  EXPECT_EQ(p->blocks_corrupt, 0u);
  EXPECT_EQ(p->blocks_rebuilt, lost);
  EXPECT_EQ(p->bytes_rebuilt, lost * 4096);
  for (uint32_t d = 0; d < 8; ++d) {
    if (d == 1) continue;
    EXPECT_EQ(after.at(d) - before.at(d), expected[d]) << "device " << d;
  }
  auto checked = store_->Stat("m", true, true);
  ASSERT_TRUE(checked.ok());
  EXPECT_EQ(checked->degraded_stripes, 0u);
  for (const auto& s : checked->stripes) {
    for (const auto& b : s.blocks) EXPECT_NE(b.record.device, 1u);
  }
  auto back = Get("m");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

// A block that fails its CRC32C while a rebuild reads it is rebuilt too; corruption in stripes
// the rebuild does not touch is left to a full check.
TEST_F(StoreTest, MissingOnlyRecoverRebuildsWhatItFindsBad) {
  const auto data = RandomBytes(20 * 16384, 22);
  ASSERT_TRUE(Put("b", data).ok());
  auto st = store_->Stat("b", true, false);
  ASSERT_TRUE(st.ok());
  int victim = -1, untouched = -1;  // A stripe with a block on device 1, and one without.
  for (const auto& s : st->stripes) {
    const bool hit = HasBlockOn(s, 1);
    if (hit && victim < 0) victim = static_cast<int>(s.index);
    if (!hit && untouched < 0) untouched = static_cast<int>(s.index);
  }
  ASSERT_GE(victim, 0);
  ASSERT_GE(untouched, 0);
  // The first data block of the victim stripe not on device 1: the rebuild reads it.
  const auto& blocks = st->stripes[victim].blocks;
  const BlockRecord read_first = blocks[0].record.device == 1 ? blocks[1].record : blocks[0].record;
  Clobber(read_first, 0x3C);
  Clobber(st->stripes[untouched].blocks[2].record, 0x4D);
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  auto p = store_->Recover("b", nullptr, MissingOnly());
  ASSERT_TRUE(p.ok()) << p.status();
  const uint64_t lost = std::count_if(st->stripes.begin(), st->stripes.end(),
                                      [](const auto& s) { return HasBlockOn(s, 1); });
  EXPECT_EQ(p->blocks_corrupt, 1u);
  EXPECT_EQ(p->blocks_rebuilt, lost + 1);
  auto checked = store_->Stat("b", true, true);
  ASSERT_TRUE(checked.ok());
  EXPECT_EQ(checked->degraded_stripes, 1u);  // Only the stripe the rebuild did not touch.
  auto full = store_->Recover("b", nullptr);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->blocks_corrupt, 1u);
  EXPECT_EQ(full->blocks_rebuilt, 1u);
  checked = store_->Stat("b", true, true);
  ASSERT_TRUE(checked.ok());
  EXPECT_EQ(checked->degraded_stripes, 0u);
  auto back = Get("b");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

// Blocks flagged corrupt are read last, and each block is counted once: as what its read found,
// or (never read) as what was known of it.
TEST_F(StoreTest, MissingOnlyRecoverTriesFlaggedBlocksLastAndCountsEachOnce) {
  const auto data = RandomBytes(16384, 25);  // One 4+2 stripe.
  ASSERT_TRUE(Put("f", data).ok());
  auto st = store_->Stat("f", true, false);
  ASSERT_TRUE(st.ok());
  const auto& blocks = st->stripes[0].blocks;
  const std::vector<uint8_t> saved = Snapshot(blocks[1].record);
  Clobber(blocks[0].record, 0x61);
  Clobber(blocks[1].record, 0x62);
  auto back = Get("f");  // Decodes from the other four; flags blocks 0 and 1 corrupt.
  ASSERT_TRUE(back.ok()) << back.status();
  Restore(blocks[1].record, saved);  // Block 1's fault was transient.
  ASSERT_TRUE(store_->admin().SetDeviceState(blocks[2].record.device, DeviceState::kFailed).ok());
  // Needed: 0 and 1 (flagged), 2 (failed device). Read: 3, 4, 5 (3 good of 4 needed), then the
  // flagged ones as a last resort: 0 fails again, 1 reads good and is trusted again.
  auto p = store_->Recover("f", nullptr, MissingOnly());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->blocks_checked, 5u);
  EXPECT_EQ(p->blocks_corrupt, 1u);
  EXPECT_EQ(p->blocks_unreadable, 1u);
  EXPECT_EQ(p->blocks_rebuilt, 2u);
  auto after = store_->Stat("f", true, true);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->degraded_stripes, 0u);
  EXPECT_EQ(after->stripes[0].blocks[1].record.device, blocks[1].record.device);  // Not moved.
  EXPECT_EQ(after->stripes[0].blocks[1].record.lba, blocks[1].record.lba);
  back = Get("f");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

// With nothing known lost, a rebuild reads nothing.
TEST_F(StoreTest, MissingOnlyRecoverOfAHealthyObjectReadsNothing) {
  const auto data = RandomBytes(8 * 16384, 23);
  ASSERT_TRUE(Put("h", data).ok());
  const auto before = BytesRead(*store_);
  auto p = store_->Recover("h", nullptr, MissingOnly());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->stripes_done, 8u);
  EXPECT_EQ(p->blocks_checked, 0u);
  EXPECT_EQ(p->blocks_rebuilt, 0u);
  EXPECT_EQ(BytesRead(*store_), before);
}

// Too many devices lost for some stripes: those are counted lost, the others rebuilt. 2+2
// stripes over 8 devices, 3 failed: 5 online devices still hold a stripe's 4 blocks apart.
TEST_F(StoreTest, MissingOnlyRecoverCountsLostStripesAndRebuildsTheRest) {
  const auto data = RandomBytes(40 * 8192, 24);
  ASSERT_TRUE(Put("l", data, 2, 2).ok());
  auto st = store_->Stat("l", true, false);
  ASSERT_TRUE(st.ok());
  auto on_failed = [](const BlockRecord& b) { return b.device >= 1 && b.device <= 3; };
  for (uint32_t d : {1u, 2u, 3u})
    ASSERT_TRUE(store_->admin().SetDeviceState(d, DeviceState::kFailed).ok());
  uint64_t lost_stripes = 0, rebuildable = 0;
  std::set<uint64_t> lost;
  for (const auto& s : st->stripes) {
    int gone = 0;
    for (const auto& b : s.blocks) gone += on_failed(b.record);
    if (gone > 2) {
      ++lost_stripes;
      lost.insert(s.index);
    } else {
      rebuildable += gone;
    }
  }
  ASSERT_GT(lost_stripes, 0u);
  ASSERT_GT(rebuildable, 0u);
  auto p = store_->Recover("l", nullptr, MissingOnly());
  EXPECT_TRUE(absl::IsDataLoss(p.status())) << p.status();
  EXPECT_NE(p.status().message().find(absl::StrCat(lost_stripes, " of 40 stripes")),
            std::string::npos)
      << p.status();
  // Every stripe but the lost ones has all its blocks on online devices now.
  auto after = store_->Stat("l", true, false);
  ASSERT_TRUE(after.ok());
  for (const auto& s : after->stripes) {
    int gone = 0;
    for (const auto& b : s.blocks) gone += on_failed(b.record);
    EXPECT_EQ(gone > 0, lost.count(s.index) > 0) << "stripe " << s.index;
  }
  for (uint32_t d : {1u, 2u, 3u})
    ASSERT_TRUE(store_->admin().SetDeviceState(d, DeviceState::kOnline).ok());
  auto back = Get("l");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

TEST_F(StoreTest, RestartKeepsObjectsAndFreeSpace) {
  const auto a = RandomBytes(50000, 7);
  const auto b = RandomBytes(3 * 16384, 8);
  ASSERT_TRUE(Put("a", a).ok());
  ASSERT_TRUE(Put("b", b, 6, 2, 8192, ec::MatrixType::kVandermonde).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(7, DeviceState::kFailed).ok());
  const uint64_t free_before = TotalFree();
  Open();
  EXPECT_EQ(TotalFree(), free_before);
  auto devices = store_->admin().ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[7].record.state, DeviceState::kFailed);
  auto back = Get("a");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  back = Get("b");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, b);
  auto list = ListAll(*store_);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].object.matrix, ec::MatrixType::kVandermonde);
  EXPECT_EQ((*list)[1].object.block_size, 8192u);
}

TEST_F(StoreTest, UnfinishedEncodeLeavesNothing) {
  const uint64_t free_before = TotalFree();
  const auto data = RandomBytes(200000, 9);
  EncodeParams p;
  p.name = "broken";
  VectorSource src(data, 7777, 100000);
  EXPECT_TRUE(absl::IsCancelled(store_->Encode(p, src).status()));
  EXPECT_EQ(TotalFree(), free_before);
  EXPECT_TRUE(absl::IsNotFound(store_->Stat("broken", false, false).status()));
  ASSERT_TRUE(Put("broken", data).ok());  // The name is free again.

  // A crash mid-encode leaves a pending object in the catalog: the next start drops it.
  store_.reset();
  {
    auto catalog = Catalog::Open((dir_ / "catalog.db").string());
    ASSERT_TRUE(catalog.ok());
    ObjectRecord o;
    o.name = "crashed";
    o.data_blocks = 1;
    o.parity_blocks = 1;
    o.block_size = 4096;
    auto id = (*catalog)->CreatePendingObject(o);
    ASSERT_TRUE(id.ok());
    BlockRecord blk;
    blk.device = 3;
    blk.lba = 4000;
    blk.lba_count = 1;
    ASSERT_TRUE((*catalog)->AddBlocks(*id, {&blk, 1}).ok());
  }
  Open();
  EXPECT_TRUE(absl::IsNotFound(store_->Stat("crashed", false, false).status()));
  auto back = Get("broken");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

// A catalog row whose LBA count disagrees with its object's block size is never read (it would
// overrun the block's room in the stripe buffer): the block is rebuilt from the others.
TEST_F(StoreTest, ABlockRowWithTheWrongLbaCountIsNotRead) {
  const auto data = RandomBytes(4 * 4096 * 3, 12);
  ASSERT_TRUE(Put("odd", data).ok());
  auto st = *store_->Stat("odd", /*with_blocks=*/true, /*verify=*/false);
  BlockRecord wrong = st.stripes[1].blocks[2].record;
  store_.reset();
  {
    auto catalog = Catalog::Open((dir_ / "catalog.db").string());
    ASSERT_TRUE(catalog.ok());
    wrong.lba = 4000;  // free LBAs at the end of the 4096-LBA device, two of them
    wrong.lba_count = 2;
    ASSERT_TRUE((*catalog)->ReplaceBlocks(st.object.id, {&wrong, 1}).ok());
  }
  Open();
  const uint64_t read_before = CounterSum(*store_->admin().ListDevices(), "nvme_bytes_read");
  uint32_t reconstructed = 0;
  auto back = Get("odd", 0, 0, &reconstructed);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
  EXPECT_EQ(reconstructed, 1u);
  // Four blocks of each stripe and nothing else: stripe 1's three good data blocks and one
  // parity block to rebuild the fourth; not the two LBAs the bad row names.
  EXPECT_EQ(CounterSum(*store_->admin().ListDevices(), "nvme_bytes_read") - read_before,
            12u * 4096);
}

// Every call that takes a name refuses one no object can have, with the rule it breaks, and
// without echoing its control characters; a valid missing name is still NotFound.
TEST_F(StoreTest, RefusesBadNamesOnEveryCall) {
  const auto data = RandomBytes(5000, 11);
  ASSERT_TRUE(Put("ok", data).ok());
  const uint64_t free_before = TotalFree();
  for (const std::string& bad : {std::string("/a"), std::string("a//b"), std::string("a/../b"),
                                 std::string("a\\b"), std::string("a\nb"), std::string("x\0y", 3),
                                 std::string(".."), std::string(1025, 'n'), std::string("\xff"),
                                 std::string("a\xe2\x80\xae"
                                             "b")}) {
    absl::Status put = Put(bad, data).status();
    EXPECT_TRUE(absl::IsInvalidArgument(put)) << put;
    EXPECT_EQ(put.message().find('\n'), absl::string_view::npos);
    EXPECT_TRUE(absl::IsInvalidArgument(Get(bad).status()));
    VectorSink sink;
    EXPECT_TRUE(absl::IsInvalidArgument(store_->GetBlock(bad, 0, 0, sink)));
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Stat(bad, false, false).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Delete(bad).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Recover(bad, nullptr).status()));
    VectorSource src(data);
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Update(bad, 0, src, false).status()));
  }
  EXPECT_NE(Put(std::string(1025, 'n'), data).status().message().find("limit is 1024"),
            absl::string_view::npos);
  EXPECT_TRUE(absl::IsNotFound(Get("missing").status()));
  EXPECT_EQ(TotalFree(), free_before);
  ASSERT_TRUE(Put(std::string(1024, 'n'), data).ok());  // The limit itself is allowed.
}

// A source that reads to its end but then refuses the commit (a stream whose end was a failure).
class RefusingSource : public VectorSource {
 public:
  using VectorSource::VectorSource;
  absl::Status BeforeCommit() override {
    ++asked;
    return absl::CancelledError("the stream failed");
  }
  int asked = 0;
};

TEST_F(StoreTest, ARefusedCommitStoresNothing) {
  const auto data = RandomBytes(100000, 12);
  ASSERT_TRUE(Put("base", data).ok());
  const uint64_t free_before = TotalFree();
  EncodeParams p;
  p.name = "refused";
  RefusingSource src(data);
  absl::Status s = store_->Encode(p, src).status();
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_EQ(src.asked, 1);
  EXPECT_TRUE(absl::IsNotFound(Get("refused").status()));
  EXPECT_EQ(TotalFree(), free_before);
  const std::vector<uint8_t> patch(5000, 0xab);
  RefusingSource update(patch);
  EXPECT_TRUE(absl::IsCancelled(store_->Update("base", 100, update, false).status()));
  EXPECT_EQ(update.asked, 1);
  auto back = Get("base");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
  EXPECT_EQ(TotalFree(), free_before);
  ASSERT_TRUE(Put("refused", data).ok());  // The name is free.
}

TEST_F(StoreTest, StatVerifyStopsWhenCancelled) {
  ASSERT_TRUE(Put("obj", RandomBytes(100000, 13)).ok());
  EXPECT_TRUE(absl::IsCancelled(
      store_->Stat("obj", false, true, Interrupt{.cancelled = [] { return true; }}).status()));
  auto done = store_->Stat("obj", false, true, Interrupt{.cancelled = [] { return false; }});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->degraded_stripes, 0u);
  EXPECT_EQ(done->object.size, 100000u);
}

// A source that delivers nothing until Release, then `data`: it waits in Await when
// `in_await` (a client that sent a header and nothing yet: the update has taken nothing), else
// in its first Read (a client that stopped mid-stream: the update holds its object's lock and
// its memory).
class WaitingSource : public ByteSource {
 public:
  WaitingSource(const std::vector<uint8_t>& data, bool in_await)
      : inner_(data), in_await_(in_await) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override {
    if (!in_await_) Wait();
    return inner_.Read(buffer);
  }
  absl::StatusOr<bool> Await() override {
    if (in_await_) Wait();
    return true;
  }
  void WaitUntilWaiting() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return waiting_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  void Wait() {
    std::unique_lock lock(mu_);
    waiting_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
  }

  VectorSource inner_;
  const bool in_await_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool waiting_ = false;
  bool released_ = false;
};

// A sink whose Start blocks until Release: a read that holds its object's shared lock.
class BlockingSink : public VectorSink {
 public:
  absl::Status Start(uint64_t size) override {
    std::unique_lock lock(mu_);
    started_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
    return VectorSink::Start(size);
  }
  void WaitUntilStarted() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return started_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool released_ = false;
};

Interrupt Within(absl::Duration d) { return Interrupt{.deadline = absl::Now() + d}; }

TEST_F(StoreTest, LockWaitsEndAtTheDeadlineOrWhenTheCallerGoesAway) {
  std::vector<uint8_t> data = RandomBytes(40000, 21);
  ASSERT_TRUE(Put("obj", data).ok());
  // An update whose client stopped mid-stream holds the object's exclusive lock.
  const std::vector<uint8_t> patch = RandomBytes(100, 22);
  WaitingSource source(patch, /*in_await=*/false);
  absl::StatusOr<UpdateResult> updated;
  std::thread update([&] { updated = store_->Update("obj", 10, source, /*append=*/false); });
  source.WaitUntilWaiting();
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 2 * 6 * 4096u);  // Its two stripes.

  const absl::Time start = absl::Now();
  absl::StatusOr<ObjectStatus> stat =
      store_->Stat("obj", false, false, Within(absl::Milliseconds(100)));
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(stat.status().code(), absl::StatusCode::kDeadlineExceeded) << stat.status();
  EXPECT_NE(stat.status().message().find("lock of \"obj\""), std::string::npos) << stat.status();
  EXPECT_GE(waited, absl::Milliseconds(100));
  EXPECT_LT(waited, absl::Seconds(2));

  std::atomic<bool> gone{false};
  std::thread leave([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gone = true;
  });
  VectorSink sink;
  const absl::Status read =
      store_->Read("obj", 0, 0, sink, Interrupt{.cancelled = [&] { return gone.load(); }});
  leave.join();
  EXPECT_EQ(read.code(), absl::StatusCode::kCancelled) << read;
  EXPECT_TRUE(sink.bytes.empty());
  VectorSink block;
  EXPECT_EQ(store_->GetBlock("obj", 0, 0, block, Within(absl::Milliseconds(50))).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store_->Delete("obj", Within(absl::Milliseconds(50))).status().code(),
            absl::StatusCode::kDeadlineExceeded);

  source.Release();
  update.join();
  ASSERT_TRUE(updated.ok()) << updated.status();
  std::copy(patch.begin(), patch.end(), data.begin() + 10);
  EXPECT_EQ(*Get("obj"), data);  // The delete that gave up deleted nothing.
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 0u);
}

TEST_F(StoreTest, AnUpdateWhoseSourceHasNothingYetHoldsNoLockAndNoMemory) {
  std::vector<uint8_t> data = RandomBytes(40000, 24);
  ASSERT_TRUE(Put("obj", data).ok());
  const std::vector<uint8_t> patch = RandomBytes(100, 25);
  WaitingSource source(patch, /*in_await=*/true);
  absl::StatusOr<UpdateResult> updated;
  std::thread update([&] { updated = store_->Update("obj", 10, source, /*append=*/false); });
  source.WaitUntilWaiting();
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 0u);
  absl::StatusOr<ObjectStatus> stat = store_->Stat("obj", false, false, Within(absl::Seconds(5)));
  EXPECT_TRUE(stat.ok()) << stat.status();  // Not held by the update.
  EXPECT_EQ(*Get("obj"), data);
  source.Release();
  update.join();
  ASSERT_TRUE(updated.ok()) << updated.status();
  std::copy(patch.begin(), patch.end(), data.begin() + 10);
  EXPECT_EQ(*Get("obj"), data);
}

TEST_F(StoreTest, AWriterThatGivesUpLetsNewReadersIn) {
  const std::vector<uint8_t> data = RandomBytes(40000, 23);
  ASSERT_TRUE(Put("obj", data).ok());
  BlockingSink holder;  // A read holding the object's shared lock.
  absl::Status held;
  std::thread read([&] { held = store_->Read("obj", 0, 0, holder); });
  holder.WaitUntilStarted();
  // A delete waits for the exclusive lock in the turnstile, which new readers pass first...
  EXPECT_EQ(store_->Delete("obj", Within(absl::Milliseconds(100))).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  // ...and lets it go when it gives up: a new reader gets in beside the first.
  absl::StatusOr<ObjectStatus> stat = store_->Stat("obj", false, false, Within(absl::Seconds(5)));
  EXPECT_TRUE(stat.ok()) << stat.status();
  holder.Release();
  read.join();
  EXPECT_TRUE(held.ok()) << held;
  EXPECT_EQ(holder.bytes, data);
}

TEST_F(StoreTest, RefusesBadRequestsWithoutSideEffects) {
  const auto data = RandomBytes(5000, 10);
  ASSERT_TRUE(Put("taken", data).ok());
  const uint64_t free_before = TotalFree();
  EXPECT_TRUE(absl::IsInvalidArgument(Put("x", data, 129, 2).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Put("x", data, 4, 33).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Put("x", data, 4, 2, 100).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Put("x", data, 4, 2, (128ull << 20) + 64).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Put("x", data, 6, 3).status()));  // 9 > 8 devices.
  EXPECT_TRUE(absl::IsInvalidArgument(Put("", data).status()));
  EXPECT_TRUE(absl::IsAlreadyExists(Put("taken", data).status()));
  EXPECT_TRUE(absl::IsNotFound(Get("nope").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Delete("nope").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->admin().SetDeviceState(8, DeviceState::kFailed).status()));
  ASSERT_TRUE(store_->admin().SetDeviceState(0, DeviceState::kFailed).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(2, DeviceState::kFailed).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(Put("x", data, 4, 2).status()));  // 5 online < 6.
  EXPECT_EQ(TotalFree(), free_before);
  auto back = Get("taken");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

TEST_F(StoreTest, OutOfSpaceFailsCleanlyAndDeleteFrees) {
  // 8 devices x 16 MiB; 4+2 x 1 MiB blocks: each stripe takes 6 MiB of 128 MiB.
  const auto big = RandomBytes(60 << 20, 11);
  EncodeParams p;
  p.name = "big";
  p.block_size = 1 << 20;
  const uint64_t free_before = TotalFree();
  {
    VectorSource src(big, 1 << 20);
    auto o = store_->Encode(p, src);
    ASSERT_TRUE(o.ok()) << o.status();
  }
  p.name = "too-big";
  {
    VectorSource src(big, 1 << 20);
    EXPECT_TRUE(absl::IsResourceExhausted(store_->Encode(p, src).status()));
  }
  auto freed = store_->Delete("big");
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 15ull * 6 * (1 << 20));
  EXPECT_EQ(TotalFree(), free_before);
}

// A stripe as wide as the online devices has no device outside it: rewriting its block that sits
// on a failed device says so, not that the other devices are out of space.
TEST_F(StoreTest, AStripeOnEveryOnlineDeviceSaysSoWhenABlockMustMove) {
  const auto data = RandomBytes(6 * 4096, 12);
  ASSERT_TRUE(Put("wide", data, 6, 2).ok());  // 6+2 on 8 devices: one block on each
  auto st = store_->Stat("wide", true, false);
  ASSERT_TRUE(st.ok()) << st.status();
  const uint32_t device = st->stripes[0].blocks[0].record.device;
  ASSERT_TRUE(store_->admin().SetDeviceState(device, DeviceState::kFailed).ok());
  const std::string want =
      "stripe 0 of \"wide\" is on every online device (7); add a device or bring one back online "
      "to move block 0";

  absl::StatusOr<RecoverProgress> recovered = store_->Recover("wide", nullptr);
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(recovered.status().message(), want);

  const std::vector<uint8_t> patch(10, 0xAB);
  VectorSource src(patch);
  absl::StatusOr<UpdateResult> updated = store_->Update("wide", 0, src, false);
  EXPECT_EQ(updated.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(updated.status().message(), want);
  auto back = Get("wide");  // unchanged, served degraded
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);

  // With the device back there is a place again.
  ASSERT_TRUE(store_->admin().SetDeviceState(device, DeviceState::kOnline).ok());
  VectorSource again(patch);
  EXPECT_TRUE(store_->Update("wide", 0, again, false).ok());
}

}  // namespace
}  // namespace ecd::store
