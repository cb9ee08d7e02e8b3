// Tests the ObjectCatalog contract on the SQLite catalog, used only through the interface: the
// object lifecycle, updates guarded by version, intents dropped at reopen, and a COMMIT whose
// fsync fails (through a VFS that wraps SQLite's own) ending with an unknown outcome.
#include "lib/catalog/object_catalog.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "lib/catalog/catalog.h"
#include "lib/catalog/fenced_catalog.h"
#include "lib/catalog/sqlite_fault_vfs_test_util.h"

namespace ecd::store {
namespace {

class ObjectCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fault_vfs::Install();
    dir_ = std::filesystem::temp_directory_path() /
           ("object_catalog_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Reopen();
    for (uint32_t id = 0; id < 4; ++id) {
      DeviceRecord d;
      d.id = id;
      d.path = "devices/nvme" + std::to_string(id) + ".ns";
      d.size_bytes = 1 << 20;
      d.lba_size = 4096;
      ASSERT_TRUE(catalog().AddDevice(d).ok());
    }
  }
  void TearDown() override {
    catalog_.reset();
    fault_vfs::Uninstall();
    std::filesystem::remove_all(dir_);
  }
  // Closes the catalog and opens it again, as a restart does; the store holds only the interface.
  void Reopen() {
    catalog_.reset();
    auto c = Catalog::Open((dir_ / "catalog.db").string());
    ASSERT_TRUE(c.ok()) << c.status();
    catalog_ = std::move(*c);
  }
  // Reopen, with the catalog behind a FencedCatalog.
  void ReopenFenced() {
    Reopen();
    catalog_ = std::make_unique<FencedCatalog>(std::move(catalog_));
  }
  ObjectCatalog& catalog() { return *catalog_; }

  static ObjectRecord Object(const std::string& name) {
    ObjectRecord o;
    o.name = name;
    o.data_blocks = 2;
    o.parity_blocks = 1;
    o.block_size = 4096;
    return o;
  }
  // The three blocks of `stripe`, block i on device i at `lba`.
  static std::vector<BlockRecord> Stripe(uint64_t stripe, uint64_t lba) {
    std::vector<BlockRecord> blocks;
    for (uint32_t i = 0; i < 3; ++i) {
      BlockRecord b;
      b.stripe = stripe;
      b.index = i;
      b.device = i;
      b.lba = lba;
      b.lba_count = 1;
      b.crc32c = 0x1000 + static_cast<uint32_t>(stripe * 3 + i);
      blocks.push_back(b);
    }
    return blocks;
  }
  // A committed object `name` of two stripes at LBAs 10 and 11.
  int64_t Committed(const std::string& name) {
    auto id = catalog().CreatePendingObject(Object(name));
    EXPECT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(catalog().AddBlocks(*id, Stripe(0, 10)).ok());
    EXPECT_TRUE(catalog().AddBlocks(*id, Stripe(1, 11)).ok());
    EXPECT_TRUE(catalog().CommitObject(*id, 12000, 2, /*seq=*/7).ok());
    return *id;
  }
  size_t BlockCount(int64_t id) {
    size_t n = 0;
    EXPECT_TRUE(catalog().ForEachBlockOf(id, [&](const BlockRecord&) { ++n; }).ok());
    return n;
  }

  std::filesystem::path dir_;
  std::unique_ptr<ObjectCatalog> catalog_;
};

TEST_F(ObjectCatalogTest, ObjectLifecycle) {
  auto id = catalog().CreatePendingObject(Object("a"));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(absl::IsAlreadyExists(catalog().CreatePendingObject(Object("a")).status()));
  ASSERT_TRUE(catalog().AddBlocks(*id, Stripe(0, 10)).ok());
  ASSERT_TRUE(catalog().AddBlocks(*id, Stripe(1, 11)).ok());
  // An intent is invisible to readers, but its blocks are recorded.
  EXPECT_TRUE(absl::IsNotFound(catalog().GetObject("a").status()));
  EXPECT_TRUE(catalog().ListObjects()->empty());
  EXPECT_EQ(catalog().GetBlocks(*id, 0, 2)->size(), 6u);

  ASSERT_TRUE(catalog().CommitObject(*id, 12000, 2, /*seq=*/7).ok());
  EXPECT_FALSE(catalog().CommitObject(*id, 12000, 2).ok());  // no longer pending
  auto o = catalog().GetObject("a");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->id, *id);
  EXPECT_EQ(o->size, 12000u);
  EXPECT_EQ(o->stripe_count, 2u);
  EXPECT_EQ(o->version, 1u);
  EXPECT_EQ(*catalog().CommitSeq(), 7u);
  auto blocks = catalog().GetBlocks(*id, 1, 1);
  ASSERT_TRUE(blocks.ok());
  ASSERT_EQ(blocks->size(), 3u);
  EXPECT_EQ((*blocks)[2].device, 2u);
  EXPECT_EQ((*blocks)[2].lba, 11u);

  // Committed state survives a reopen; deleting removes the object and its blocks.
  Reopen();
  EXPECT_EQ(catalog().GetObject("a")->stripe_count, 2u);
  ASSERT_TRUE(catalog().DeleteObject(*id, /*seq=*/9).ok());
  EXPECT_TRUE(absl::IsNotFound(catalog().GetObject("a").status()));
  EXPECT_EQ(BlockCount(*id), 0u);
  EXPECT_EQ(*catalog().CommitSeq(), 9u);
  ASSERT_TRUE(catalog().AdvanceCommitSeq(3).ok());  // never lowers it
  EXPECT_EQ(*catalog().CommitSeq(), 9u);
}

TEST_F(ObjectCatalogTest, UpdateIsGuardedByTheExpectedVersion) {
  const int64_t id = Committed("u");
  BlockRecord moved = Stripe(0, 10)[1];
  moved.lba = 50;
  moved.crc32c = 42;
  const std::vector<BlockRecord> added = Stripe(2, 12);
  ASSERT_TRUE(catalog()
                  .CommitUpdate(id, /*expected_version=*/1, {&moved, 1}, added, 18000, 3,
                                /*seq=*/8)
                  .ok());
  auto o = catalog().GetObject("u");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->version, 2u);
  EXPECT_EQ(o->size, 18000u);
  EXPECT_EQ(o->stripe_count, 3u);
  EXPECT_EQ(*catalog().CommitSeq(), 8u);
  EXPECT_EQ((*catalog().GetBlocks(id, 0, 1))[1].lba, 50u);
  EXPECT_EQ(catalog().GetBlocks(id, 0, 3)->size(), 9u);

  // A stale version is Aborted and changes nothing.
  BlockRecord again = moved;
  again.lba = 60;
  const absl::Status stale =
      catalog().CommitUpdate(id, /*expected_version=*/1, {&again, 1}, {}, 1, 1, /*seq=*/10);
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  o = catalog().GetObject("u");
  EXPECT_EQ(o->version, 2u);
  EXPECT_EQ(o->size, 18000u);
  EXPECT_EQ((*catalog().GetBlocks(id, 0, 1))[1].lba, 50u);
  EXPECT_EQ(*catalog().CommitSeq(), 8u);
}

TEST_F(ObjectCatalogTest, IntentsAreDroppedAtReopen) {
  Committed("kept");
  auto id = catalog().CreatePendingObject(Object("half"));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(catalog().AddBlocks(*id, Stripe(0, 20)).ok());
  Reopen();  // a crash mid-encode leaves the intent
  auto dropped = catalog().DropPendingObjects();
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, 1);
  EXPECT_EQ(BlockCount(*id), 0u);  // its extents are free again
  EXPECT_TRUE(catalog().GetObject("kept").ok());
  EXPECT_TRUE(catalog().CreatePendingObject(Object("half")).ok());  // and its name
}

TEST(ObjectCatalogStatusTest, OnlyCommitOutcomeUnknownErrorsMatch) {
  const absl::Status unknown = CommitOutcomeUnknownError("catalog commit: disk I/O error");
  EXPECT_TRUE(IsCommitOutcomeUnknown(unknown));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kUnknown);
  EXPECT_NE(unknown.message().find("disk I/O error"), std::string::npos) << unknown;
  EXPECT_FALSE(IsCatalogDamage(unknown));

  EXPECT_FALSE(IsCommitOutcomeUnknown(absl::OkStatus()));
  EXPECT_FALSE(IsCommitOutcomeUnknown(absl::UnknownError("catalog commit: disk I/O error")));
  EXPECT_FALSE(IsCommitOutcomeUnknown(absl::InternalError("catalog commit: disk I/O error")));
  absl::Status other = absl::UnknownError("x");
  other.SetPayload("ecd.catalog/something-else", absl::Cord("1"));
  EXPECT_FALSE(IsCommitOutcomeUnknown(other));
  absl::Status recoded(absl::StatusCode::kInternal, unknown.message());
  unknown.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& value) { recoded.SetPayload(url, value); });
  EXPECT_FALSE(IsCommitOutcomeUnknown(recoded));  // the code matters too
}

// The WAL's fsync fails while CommitObject commits: its outcome is unknown. The catalog must
// then hold the object committed in full or not at all once reopened.
TEST_F(ObjectCatalogTest, FailedWalSyncAtCommitIsOutcomeUnknown) {
  auto id = catalog().CreatePendingObject(Object("a"));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(catalog().AddBlocks(*id, Stripe(0, 10)).ok());
  const CatalogStats before = catalog().stats();
  fault_vfs::fail_wal_sync = true;
  const absl::Status commit = catalog().CommitObject(*id, 6000, 1, /*seq=*/5);
  fault_vfs::fail_wal_sync = false;
  EXPECT_TRUE(IsCommitOutcomeUnknown(commit)) << commit;
  EXPECT_EQ(catalog().stats().errors, before.errors + 1);
  EXPECT_EQ(catalog().stats().commits, before.commits);

  Reopen();
  auto o = catalog().GetObject("a");
  if (o.ok()) {  // the commit was durable after all
    EXPECT_EQ(o->size, 6000u);
    EXPECT_EQ(BlockCount(*id), 3u);
    EXPECT_EQ(*catalog().CommitSeq(), 5u);
  } else {  // it was not: the object is still an intent
    EXPECT_TRUE(absl::IsNotFound(o.status())) << o.status();
    EXPECT_EQ(*catalog().DropPendingObjects(), 1);
    EXPECT_EQ(*catalog().CommitSeq(), 0u);
  }
  EXPECT_TRUE(catalog().IntegrityCheck().ok());
}

// A write of one statement commits within it, so a failed fsync leaves its outcome unknown too;
// the catalog goes on working afterwards. An error before the commit stays what it is.
TEST_F(ObjectCatalogTest, EveryWriteMayEndUnknownButEarlierErrorsStay) {
  fault_vfs::fail_wal_sync = true;
  const absl::Status meta = catalog().SetMeta("k", "v");
  const absl::Status seq = catalog().AdvanceCommitSeq(4);
  fault_vfs::fail_wal_sync = false;
  EXPECT_TRUE(IsCommitOutcomeUnknown(meta)) << meta;
  EXPECT_TRUE(IsCommitOutcomeUnknown(seq)) << seq;

  ASSERT_TRUE(catalog().SetMeta("k", "w").ok());
  EXPECT_EQ(**catalog().GetMeta("k"), "w");
  const int64_t id = Committed("a");
  auto other = catalog().CreatePendingObject(Object("b"));
  ASSERT_TRUE(other.ok());
  const absl::Status clash = catalog().AddBlocks(*other, Stripe(0, 10));  // a's extents
  EXPECT_TRUE(absl::IsAlreadyExists(clash)) << clash;
  EXPECT_FALSE(IsCommitOutcomeUnknown(clash));
  EXPECT_EQ(BlockCount(*other), 0u);
  EXPECT_EQ(BlockCount(id), 6u);
}

// Once a commit's outcome is unknown, the fenced catalog refuses every write (saying to restart)
// and still serves reads; a catalog opened again takes writes, the outcome settled.
TEST_F(ObjectCatalogTest, AFencedCatalogWritesNothingAfterAnUnknownOutcome) {
  ReopenFenced();
  auto& fenced = static_cast<FencedCatalog&>(catalog());
  const int64_t a = Committed("a");
  EXPECT_FALSE(fenced.fenced_because().has_value());
  auto id = catalog().CreatePendingObject(Object("b"));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(catalog().AddBlocks(*id, Stripe(0, 20)).ok());
  fault_vfs::fail_wal_sync = true;
  const absl::Status commit = catalog().CommitObject(*id, 6000, 1, /*seq=*/9);
  fault_vfs::fail_wal_sync = false;
  ASSERT_TRUE(IsCommitOutcomeUnknown(commit)) << commit;
  ASSERT_TRUE(fenced.fenced_because().has_value());
  EXPECT_NE(fenced.fenced_because()->find("committing an object"), std::string::npos);

  // Writes are refused before they reach SQLite: nothing is added, deleted or freed.
  const CatalogStats before = catalog().stats();
  for (const absl::Status& s :
       {catalog().DeleteObject(*id), catalog().DeleteObject(a), catalog().SetMeta("k", "v"),
        catalog().AdvanceCommitSeq(10), catalog().CreatePendingObject(Object("c")).status(),
        catalog().SetBlockCorrupt(a, 0, 0, true)}) {
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    EXPECT_NE(s.message().find("restart ecd"), std::string::npos) << s;
  }
  EXPECT_EQ(catalog().stats().commits, before.commits);
  // Reads go on: the committed object and its blocks are there.
  auto got = catalog().GetObject("a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size, 12000u);
  EXPECT_EQ(BlockCount(a), 6u);

  ReopenFenced();  // The outcome is settled; writes are taken again.
  EXPECT_FALSE(static_cast<FencedCatalog&>(catalog()).fenced_because().has_value());
  EXPECT_TRUE(catalog().SetMeta("k", "v").ok());
  EXPECT_EQ(BlockCount(a), 6u);
}

}  // namespace
}  // namespace ecd::store
