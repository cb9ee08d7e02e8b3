// Block records and the catalog rebuilt from them: page formats, the resolver's rules, and a
// store whose catalog is lost, damaged or put back old, then rebuilt byte-exact.
#include "lib/store/catalog_rebuild.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "lib/records/block_record.h"
#include "lib/records/record_resolver.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

ObjectRecord Obj(int64_t id, const std::string& name, uint64_t version = 1) {
  ObjectRecord o;
  o.id = id;
  o.name = name;
  o.size = 100;
  o.data_blocks = 1;
  o.parity_blocks = 1;
  o.block_size = 4096;
  o.stripe_count = 1;
  o.version = version;
  return o;
}

TEST(BlockRecordTest, PageRoundTrip) {
  PageBuilder page(4096);
  ObjectHeader h{7, Obj(3, "a/b.txt", 2)};
  ASSERT_TRUE(page.AddObject(h));
  ASSERT_TRUE(page.AddBlock({7, 3, 0, 1, 1234, 1, 0xdeadbeef, 4096}));
  ASSERT_TRUE(page.AddEnd({7, 2}));
  ASSERT_TRUE(page.AddTombstone({9, 4}));
  ASSERT_TRUE(page.AddAbort(8));
  const std::string store(32, 'a');
  std::vector<uint8_t> bytes = page.Finish({store, 5, 3, 11, false, 6});
  ASSERT_EQ(bytes.size(), 4096u);
  RecordSet out;
  absl::StatusOr<PageHeader> header = DecodePage(bytes, out);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->store_id, store);
  EXPECT_EQ(header->device, 5u);
  EXPECT_EQ(header->generation, 3u);
  EXPECT_EQ(header->index, 11u);
  EXPECT_EQ(header->committed_through, 6u);
  ASSERT_EQ(out.objects.size(), 1u);
  EXPECT_EQ(out.objects[0].object.name, "a/b.txt");
  EXPECT_EQ(out.objects[0].object.version, 2u);
  ASSERT_EQ(out.blocks.size(), 1u);
  EXPECT_EQ(out.blocks[0].object_id, 3);
  EXPECT_EQ(out.blocks[0].seq, 7u);
  EXPECT_EQ(out.blocks[0].lba, 1234u);
  EXPECT_EQ(out.blocks[0].crc32c, 0xdeadbeefu);
  EXPECT_EQ(out.ends[0].blocks, 2u);
  EXPECT_EQ(out.tombstones[0].object_id, 4);
  EXPECT_EQ(out.aborted[0], 8u);

  bytes[100] ^= 1;  // One flipped bit fails the page's CRC32C.
  RecordSet ignored;
  EXPECT_TRUE(absl::IsDataLoss(DecodePage(bytes, ignored).status()));
  std::vector<uint8_t> zeros(4096, 0);
  EXPECT_TRUE(absl::IsNotFound(DecodePage(zeros, ignored).status()));
}

TEST(BlockRecordTest, CheckpointRoundTripAndDamage) {
  Checkpoint c{std::string(32, 'b'), 2, 9, 4, 1, 3, 17, true, 40, 41};
  std::vector<uint8_t> bytes = EncodeCheckpoint(c, 4096);
  absl::StatusOr<Checkpoint> back = DecodeCheckpoint(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->counter, 9u);
  EXPECT_EQ(back->half, 1u);
  EXPECT_EQ(back->snapshot_pages, 3u);
  EXPECT_TRUE(back->clean);
  EXPECT_EQ(back->committed_through, 40u);
  bytes[20] ^= 0x10;
  EXPECT_TRUE(absl::IsDataLoss(DecodeCheckpoint(bytes).status()));
}

// One device's records: an object header and its blocks at `seq`.
void AddOp(DeviceRecords& d, uint64_t seq, const ObjectRecord& o, uint32_t index, uint64_t lba,
           uint64_t total) {
  d.records.objects.push_back({seq, o});
  d.records.blocks.push_back({seq, o.id, 0, index, lba, 1, static_cast<uint32_t>(seq), 4096});
  d.records.ends.push_back({seq, total});
}

TEST(RecordResolverTest, NewestVersionWinsAndTombstonesDelete) {
  std::vector<DeviceRecords> d(2);
  d[0].device = 0;
  d[1].device = 1;
  d[0].committed_through = d[1].committed_through = 10;
  AddOp(d[0], 1, Obj(1, "one"), 0, 10, 2);
  AddOp(d[1], 1, Obj(1, "one"), 1, 10, 2);
  AddOp(d[0], 2, Obj(1, "one", 2), 0, 11, 1);  // An update rewrote block 0 only.
  AddOp(d[0], 3, Obj(2, "two"), 0, 12, 2);
  AddOp(d[1], 3, Obj(2, "two"), 1, 12, 2);
  d[1].records.tombstones.push_back({4, 2});
  Resolution r = Resolve(d);
  ASSERT_EQ(r.objects.size(), 1u);
  EXPECT_EQ(r.objects[0].object.version, 2u);
  ASSERT_EQ(r.objects[0].blocks.size(), 2u);
  EXPECT_EQ(r.objects[0].blocks[0].lba, 11u);  // From the update.
  EXPECT_EQ(r.objects[0].blocks[1].lba, 10u);  // Untouched by it.
  EXPECT_EQ(r.deleted, 1u);
}

TEST(RecordResolverTest, PastTheMarkOnlyCompleteOperationsCount) {
  std::vector<DeviceRecords> d(2);
  d[0].device = 0;
  d[1].device = 1;
  d[0].committed_through = d[1].committed_through = 1;
  AddOp(d[0], 1, Obj(1, "one"), 0, 10, 2);
  AddOp(d[1], 1, Obj(1, "one"), 1, 10, 2);
  // Operation 2 (an update past the mark) reached device 0 only: torn, left out whole.
  AddOp(d[0], 2, Obj(1, "one", 2), 0, 11, 2);
  // Operation 3 (a new object past the mark) reached both devices: complete, kept.
  AddOp(d[0], 3, Obj(3, "three"), 0, 12, 2);
  AddOp(d[1], 3, Obj(3, "three"), 1, 12, 2);
  // Operation 4 was voided.
  AddOp(d[0], 4, Obj(4, "four"), 0, 13, 2);
  AddOp(d[1], 4, Obj(4, "four"), 1, 13, 2);
  d[1].records.aborted.push_back(4);
  Resolution r = Resolve(d);
  ASSERT_EQ(r.objects.size(), 2u);
  EXPECT_EQ(r.objects[0].object.name, "one");
  EXPECT_EQ(r.objects[0].object.version, 1u);
  EXPECT_EQ(r.objects[0].blocks[0].lba, 10u);
  EXPECT_EQ(r.objects[1].object.name, "three");
  EXPECT_EQ(r.uncommitted, 1u);
  EXPECT_EQ(r.voided, 1u);
}

TEST(RecordResolverTest, AnExtentTakenByANewerRecordIsMissingAndPlaced) {
  std::vector<DeviceRecords> d(3);
  for (uint32_t i = 0; i < 3; ++i) {
    d[i].device = i;
    d[i].committed_through = 9;
  }
  AddOp(d[0], 1, Obj(1, "old"), 0, 10, 2);
  AddOp(d[1], 1, Obj(1, "old"), 1, 10, 2);
  AddOp(d[0], 5, Obj(2, "new"), 0, 10, 2);  // Device 0 LBA 10 was freed and reused.
  AddOp(d[2], 5, Obj(2, "new"), 1, 10, 2);
  Resolution r = Resolve(d);
  ASSERT_EQ(r.objects.size(), 2u);
  EXPECT_EQ(r.superseded_extents, 1u);
  EXPECT_EQ(r.objects[0].object.name, "old");
  EXPECT_EQ(r.objects[0].blocks[0].device, kNoDevice);
  EXPECT_TRUE(r.objects[0].blocks[0].corrupt);
  EXPECT_EQ(r.missing_blocks, 1u);
}

class CatalogRebuildTest : public TempStoreTest {
 protected:
  std::string CatalogPath() const { return (dir_ / "catalog.db").string(); }
  absl::StatusOr<RebuildReport> Rebuild() {
    store_.reset();
    CatalogToolOptions o;
    o.data_dir = dir_.string();
    return RebuildCatalog(o);
  }
  absl::Status TryOpen() {
    store_.reset();
    StoreOptions o;
    o.data_dir = dir_.string();
    o.device_count = 8;
    o.device_size = 16 << 20;
    o.default_block_size = 4096;
    return Store::Open(o).status();
  }
  void RemoveCatalog() {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::remove(CatalogPath() + suffix);
    }
  }
  // Stores objects of several shapes, updates and deletes some; returns the expected bytes.
  std::map<std::string, std::vector<uint8_t>> Populate() {
    std::map<std::string, std::vector<uint8_t>> want;
    want["small"] = RandomBytes(100, 1);
    want["multi"] = RandomBytes(5 * 4 * 4096 + 123, 2);
    want["empty"] = {};
    want["wide"] = RandomBytes(50000, 3);
    for (const auto& [name, bytes] : want) {
      EXPECT_TRUE(Put(name, bytes, name == "wide" ? 5 : 4, name == "wide" ? 3 : 2).ok()) << name;
    }
    EXPECT_TRUE(Put("gone", RandomBytes(7000, 4)).ok());
    EXPECT_TRUE(store_->Delete("gone").ok());
    std::vector<uint8_t> patch = RandomBytes(6000, 5);
    VectorSource src(patch);
    EXPECT_TRUE(store_->Update("multi", 4000, src, /*append=*/false).ok());
    std::copy(patch.begin(), patch.end(), want["multi"].begin() + 4000);
    return want;
  }
  void ExpectObjects(const std::map<std::string, std::vector<uint8_t>>& want) {
    for (const auto& [name, bytes] : want) {
      absl::StatusOr<std::vector<uint8_t>> got = Get(name);
      ASSERT_TRUE(got.ok()) << name << ": " << got.status();
      EXPECT_EQ(*got, bytes) << name;
    }
    EXPECT_TRUE(absl::IsNotFound(store_->Stat("gone", false, false).status()));
  }
};

TEST_F(CatalogRebuildTest, MissingCatalogIsRefusedThenRebuiltByteExact) {
  const auto want = Populate();
  const uint64_t multi_version = store_->Stat("multi", false, false)->object.version;
  store_.reset();
  RemoveCatalog();
  absl::Status refused = TryOpen();
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_NE(refused.message().find("is missing"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("--rebuild-catalog"), std::string::npos) << refused;
  EXPECT_FALSE(std::filesystem::exists(CatalogPath()));  // Nothing was created.

  absl::StatusOr<RebuildReport> report = Rebuild();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->resolution.objects.size(), want.size());
  EXPECT_TRUE(report->resolution.not_restored.empty());
  Open();
  ExpectObjects(want);
  EXPECT_EQ(store_->Stat("multi", false, false)->object.version, multi_version);
  // The rebuilt store keeps working: a new object, a restart, and a second rebuild agree.
  ASSERT_TRUE(Put("after", RandomBytes(9000, 6)).ok());
  auto more = want;
  more["after"] = RandomBytes(9000, 6);
  ASSERT_TRUE(Rebuild().ok());
  Open();
  ExpectObjects(more);
}

TEST_F(CatalogRebuildTest, EmptyAndTruncatedCatalogsAreRefused) {
  Populate();
  store_.reset();
  std::filesystem::resize_file(CatalogPath(), 0);
  std::filesystem::remove(CatalogPath() + "-wal");
  absl::Status refused = TryOpen();
  EXPECT_NE(refused.message().find("is empty"), std::string::npos) << refused;
  ASSERT_TRUE(Rebuild().ok());
  Open();
  store_.reset();
  // A catalog cut in half is damaged: refused, named as such.
  const uint64_t size = std::filesystem::file_size(CatalogPath());
  std::filesystem::resize_file(CatalogPath(), size / 2);
  refused = TryOpen();
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_NE(refused.message().find("--rebuild-catalog"), std::string::npos) << refused;
}

TEST_F(CatalogRebuildTest, AnOlderCatalogPutBackIsBehindItsDevices) {
  auto want = Populate();
  store_.reset();
  std::filesystem::copy_file(CatalogPath(), CatalogPath() + ".old");
  Open();
  want["later"] = RandomBytes(20000, 7);
  ASSERT_TRUE(Put("later", want["later"]).ok());
  store_.reset();  // A clean stop writes the mark on every device.
  std::filesystem::remove(CatalogPath() + "-wal");
  std::filesystem::copy_file(CatalogPath() + ".old", CatalogPath(),
                             std::filesystem::copy_options::overwrite_existing);
  absl::Status refused = TryOpen();
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_NE(refused.message().find("behind its devices"), std::string::npos) << refused;

  CatalogToolOptions o;
  o.data_dir = dir_.string();
  absl::StatusOr<CheckReport> check = CheckCatalog(o);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_FALSE(check->differences.empty());

  ASSERT_TRUE(Rebuild().ok());
  Open();
  ExpectObjects(want);
  store_.reset();
  check = CheckCatalog(o);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->differences.empty()) << check->differences.front();
}

// Four clients at once fill the logs of all the devices together: an operation that finds one
// full after another was snapshot still writes (it snapshots as often as it must).
TEST_F(CatalogRebuildTest, ConcurrentEncodesWrapEveryLogAtOnce) {
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 150; ++i) {
        auto o = Put(absl::StrCat("c", c, "-", i), RandomBytes(700, c * 1000 + i), 2, 1);
        if (!o.ok()) {
          ADD_FAILURE() << o.status();
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(failures.load(), 0);
  store_.reset();
  RemoveCatalog();
  ASSERT_TRUE(Rebuild().ok());
  Open();
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 150; i += 7) {
      EXPECT_EQ(Get(absl::StrCat("c", c, "-", i)).value(), RandomBytes(700, c * 1000 + i));
    }
  }
  auto list = ListAll(*store_);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 600u);
}

TEST_F(CatalogRebuildTest, LogsWrapThroughSnapshotsAndStillRebuild) {
  // Devices of 16 MiB have 63 record pages per half: several hundred operations wrap them.
  std::map<std::string, std::vector<uint8_t>> want;
  for (int i = 0; i < 400; ++i) {
    const std::string name = "churn" + std::to_string(i % 40);
    if (want.count(name)) {
      ASSERT_TRUE(store_->Delete(name).ok());
      want.erase(name);
    } else {
      want[name] = RandomBytes(3000 + i, i);
      ASSERT_TRUE(Put(name, want[name], 2, 1).ok());
    }
  }
  store_.reset();
  RemoveCatalog();
  ASSERT_TRUE(Rebuild().ok());
  Open();
  for (const auto& [name, bytes] : want) {
    absl::StatusOr<std::vector<uint8_t>> got = Get(name);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, bytes) << name;
  }
  auto list = ListAll(*store_);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), want.size());
}

}  // namespace
}  // namespace ecd::store
