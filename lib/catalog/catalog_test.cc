// Tests the catalog: pending objects stay invisible, names are unique, extents cannot be shared,
// and everything survives reopening.
#include "lib/catalog/catalog.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace ecd::store {
namespace {

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("catalog_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Reopen();
    DeviceRecord d;
    d.id = 0;
    d.path = "devices/nvme0.ns";
    d.size_bytes = 1 << 20;
    d.lba_size = 4096;
    ASSERT_TRUE(catalog_->AddDevice(d).ok());
  }
  void TearDown() override {
    catalog_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    catalog_.reset();
    auto c = Catalog::Open((dir_ / "catalog.db").string());
    ASSERT_TRUE(c.ok()) << c.status();
    catalog_ = std::move(*c);
  }
  static ObjectRecord Object(const std::string& name) {
    ObjectRecord o;
    o.name = name;
    o.data_blocks = 2;
    o.parity_blocks = 1;
    o.block_size = 4096;
    return o;
  }
  static BlockRecord Block(uint64_t stripe, uint32_t index, uint64_t lba) {
    BlockRecord b;
    b.stripe = stripe;
    b.index = index;
    b.lba = lba;
    b.lba_count = 1;
    b.crc32c = 0xDEADBEEF;
    return b;
  }

  // Runs `sql` on a second connection, as a hand edit or a damaged restore would change the file.
  void Edit(const std::string& sql) {
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "catalog.db").string().c_str(), &other), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(other, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(other);
  }
  // A committed object "a" with one stripe of three blocks.
  int64_t Committed() {
    auto id = catalog_->CreatePendingObject(Object("a"));
    EXPECT_TRUE(id.ok()) << id.status();
    BlockRecord blocks[] = {Block(0, 0, 0), Block(0, 1, 1), Block(0, 2, 2)};
    EXPECT_TRUE(catalog_->AddBlocks(*id, blocks).ok());
    EXPECT_TRUE(catalog_->CommitObject(*id, 5000, 1).ok());
    return *id;
  }
  static void ExpectDataLoss(const absl::Status& s, const std::string& row,
                             const std::string& column) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find(row), std::string::npos) << s;
    EXPECT_NE(s.message().find(column), std::string::npos) << s;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogTest, PendingObjectIsInvisibleUntilCommitted) {
  auto id = catalog_->CreatePendingObject(Object("a"));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(absl::IsNotFound(catalog_->GetObject("a").status()));
  BlockRecord blocks[] = {Block(0, 0, 0), Block(0, 1, 1), Block(0, 2, 2)};
  ASSERT_TRUE(catalog_->AddBlocks(*id, blocks).ok());
  ASSERT_TRUE(catalog_->CommitObject(*id, 5000, 1).ok());
  Reopen();
  auto o = catalog_->GetObject("a");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->size, 5000u);
  EXPECT_EQ(o->stripe_count, 1u);
  auto got = catalog_->GetBlocks(o->id, 0, 1);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[2].lba, 2u);
  EXPECT_EQ((*got)[2].crc32c, 0xDEADBEEFu);
}

TEST_F(CatalogTest, ListObjectsFromIsBoundedAndCountsSkipPendingObjects) {
  for (const char* name : {"a/1", "a/2", "a/3", "b", "c"}) {
    auto id = catalog_->CreatePendingObject(Object(name));
    ASSERT_TRUE(id.ok()) << id.status();
    ASSERT_TRUE(catalog_->CommitObject(*id, 1000, 1).ok());
  }
  ASSERT_TRUE(catalog_->CreatePendingObject(Object("a/25")).ok());  // pending: never listed
  const auto names = [](const absl::StatusOr<std::vector<ObjectRecord>>& got) {
    std::vector<std::string> out;
    for (const ObjectRecord& o : *got) out.push_back(o.name);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(catalog_->ListObjectsFrom("a/", false, "a0", 10)), (V{"a/1", "a/2", "a/3"}));
  EXPECT_EQ(names(catalog_->ListObjectsFrom("a/2", true, "a0", 10)), (V{"a/3"}));
  EXPECT_EQ(names(catalog_->ListObjectsFrom("a/2", false, "", 2)), (V{"a/2", "a/3"}));
  EXPECT_EQ(names(catalog_->ListObjectsFrom("b", true, "", 10)), (V{"c"}));
  EXPECT_TRUE(catalog_->ListObjectsFrom("c", true, "", 10)->empty());
  absl::StatusOr<ObjectCensus> census = catalog_->Census();
  ASSERT_TRUE(census.ok()) << census.status();
  EXPECT_EQ(census->totals.objects, 5u);
  EXPECT_EQ(census->totals.bytes, 5000u);
}

TEST_F(CatalogTest, DropPendingRemovesUnfinishedEncodes) {
  auto id = catalog_->CreatePendingObject(Object("half"));
  ASSERT_TRUE(id.ok());
  BlockRecord blocks[] = {Block(0, 0, 7)};
  ASSERT_TRUE(catalog_->AddBlocks(*id, blocks).ok());
  Reopen();
  auto dropped = catalog_->DropPendingObjects();
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 1);
  int n = 0;
  ASSERT_TRUE(catalog_->ForEachBlock([&](const BlockRecord&) { ++n; }).ok());
  EXPECT_EQ(n, 0);  // Its extent is free again.
}

TEST_F(CatalogTest, NamesAreUniqueAndExtentsCannotBeShared) {
  auto a = catalog_->CreatePendingObject(Object("x"));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(catalog_->CreatePendingObject(Object("x")).status()));
  auto b = catalog_->CreatePendingObject(Object("y"));
  ASSERT_TRUE(b.ok());
  BlockRecord first[] = {Block(0, 0, 3)};
  ASSERT_TRUE(catalog_->AddBlocks(*a, first).ok());
  BlockRecord clash[] = {Block(0, 0, 3)};
  EXPECT_FALSE(catalog_->AddBlocks(*b, clash).ok());
}

TEST_F(CatalogTest, ReplaceBlocksMovesAndClearsCorrupt) {
  auto id = catalog_->CreatePendingObject(Object("r"));
  ASSERT_TRUE(id.ok());
  BlockRecord blocks[] = {Block(0, 0, 0), Block(0, 1, 1)};
  ASSERT_TRUE(catalog_->AddBlocks(*id, blocks).ok());
  ASSERT_TRUE(catalog_->CommitObject(*id, 10, 1).ok());
  ASSERT_TRUE(catalog_->SetBlockCorrupt(*id, 0, 1, true).ok());
  auto got = catalog_->GetBlocks(*id, 0, 1);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE((*got)[1].corrupt);
  BlockRecord moved = Block(0, 1, 9);
  moved.crc32c = 42;
  ASSERT_TRUE(catalog_->ReplaceBlocks(*id, {&moved, 1}).ok());
  got = catalog_->GetBlocks(*id, 0, 1);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE((*got)[1].corrupt);
  EXPECT_EQ((*got)[1].lba, 9u);
  EXPECT_EQ((*got)[1].crc32c, 42u);
  BlockRecord missing = Block(5, 0, 11);
  EXPECT_FALSE(catalog_->ReplaceBlocks(*id, {&missing, 1}).ok());
}

TEST_F(CatalogTest, DeviceStatePersists) {
  ASSERT_TRUE(catalog_->SetDeviceState(0, DeviceState::kFailed).ok());
  EXPECT_TRUE(absl::IsNotFound(catalog_->SetDeviceState(5, DeviceState::kFailed)));
  Reopen();
  auto devices = catalog_->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].state, DeviceState::kFailed);
}

TEST_F(CatalogTest, CommitsAreTimedAndSqliteErrorsCounted) {
  std::vector<std::chrono::nanoseconds> commits;
  catalog_->SetCommitObserver([&](std::chrono::nanoseconds d) { commits.push_back(d); });
  const CatalogStats before = catalog_->stats();
  auto id = catalog_->CreatePendingObject(Object("timed"));
  ASSERT_TRUE(id.ok());
  BlockRecord blocks[] = {Block(0, 0, 0), Block(0, 1, 1), Block(0, 2, 2)};
  ASSERT_TRUE(catalog_->AddBlocks(*id, blocks).ok());
  ASSERT_TRUE(catalog_->CommitObject(*id, 100, 1).ok());
  ASSERT_TRUE(catalog_->DeleteObject(*id).ok());
  EXPECT_EQ(catalog_->stats().commits - before.commits, 3u);  // AddBlocks, commit, delete
  ASSERT_EQ(commits.size(), 3u);
  for (auto d : commits) EXPECT_GT(d.count(), 0);
  // A taken name is an answer, not an error.
  ASSERT_TRUE(catalog_->CreatePendingObject(Object("x")).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(catalog_->CreatePendingObject(Object("x")).status()));
  EXPECT_EQ(catalog_->stats().errors, before.errors);
  // A broken database is: another connection drops a table under the catalog.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "catalog.db").string().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "DROP TABLE meta", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_FALSE(catalog_->GetMeta("k").ok());
  EXPECT_EQ(catalog_->stats().errors, before.errors + 1);
}

// Rows ecd did not write are refused with DataLoss naming the row, never decoded into records the
// store would crash on or misread (tests/fuzz/catalog_fuzz.cc writes such rows at random).
TEST_F(CatalogTest, ObjectRowsTheStoreCannotUseAreDataLoss) {
  const int64_t id = Committed();
  const std::string row = "objects id=" + std::to_string(id);
  // A zero block size: Store::Read and Update divide by M * block_size.
  Edit("UPDATE objects SET block_size = 0");
  ExpectDataLoss(catalog_->GetObject("a").status(), row, "block_size");
  ExpectDataLoss(catalog_->ListObjects().status(), row, "block_size");
  // A matrix the store does not know: it was read as Cauchy.
  Edit(
      "PRAGMA ignore_check_constraints = ON; UPDATE objects SET block_size = 4096, "
      "matrix = 'bogus'");
  ExpectDataLoss(catalog_->GetObject("a").status(), row, "matrix");
  // A negative size, and an M too large for its field: they were cast to huge or wrapped values.
  Edit("UPDATE objects SET matrix = 'cauchy', size = -1");
  ExpectDataLoss(catalog_->GetObject("a").status(), row, "size");
  Edit("UPDATE objects SET size = 5000, data_blocks = 4294967298");
  ExpectDataLoss(catalog_->GetObject("a").status(), row, "data_blocks");
  // A value of the wrong type: it was read as 0.
  Edit("UPDATE objects SET data_blocks = 2, stripe_count = 'many'");
  ExpectDataLoss(catalog_->GetObject("a").status(), row, "stripe_count");
  Edit("UPDATE objects SET stripe_count = 1.5");
  ExpectDataLoss(catalog_->GetObject("a").status(), row, "stripe_count");
  // Put right, the row reads back.
  Edit("UPDATE objects SET stripe_count = 1");
  auto o = catalog_->GetObject("a");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->stripe_count, 1u);
}

TEST_F(CatalogTest, BlockAndDeviceRowsTheStoreCannotUseAreDataLoss) {
  const int64_t id = Committed();
  const std::string row = "blocks object_id=" + std::to_string(id) + " stripe=0 idx=1";
  Edit("UPDATE blocks SET lba = -5 WHERE idx = 1");
  ExpectDataLoss(catalog_->GetBlocks(id, 0, 1).status(), row, "lba");
  ExpectDataLoss(catalog_->ForEachBlock([](const BlockRecord&) {}), row, "lba");
  ExpectDataLoss(catalog_->ForEachBlockOf(id, [](const BlockRecord&) {}), row, "lba");
  Edit("UPDATE blocks SET lba = 1, crc32c = 4294967296 WHERE idx = 1");
  ExpectDataLoss(catalog_->GetBlocks(id, 0, 1).status(), row, "crc32c");
  Edit("UPDATE blocks SET crc32c = 7, device_id = -1 WHERE idx = 1");
  ExpectDataLoss(catalog_->BlockCountsByDevice().status(), "blocks device_id=-1", "device_id");
  Edit("UPDATE blocks SET device_id = 0 WHERE idx = 1");
  EXPECT_TRUE(catalog_->GetBlocks(id, 0, 1).ok());
  // A device state the store does not know: it was read as online.
  Edit("PRAGMA ignore_check_constraints = ON; UPDATE devices SET state = 'weird'");
  ExpectDataLoss(catalog_->ListDevices().status(), "devices id=0", "state");
  Edit("UPDATE devices SET state = 'failed', lba_size = 'big'");
  ExpectDataLoss(catalog_->ListDevices().status(), "devices id=0", "lba_size");
}

}  // namespace
}  // namespace ecd::store
