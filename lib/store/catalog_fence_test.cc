// Tests what the store does when a catalog commit's outcome is unknown (the WAL's fsync fails):
// it reports no success, frees no extent either version may use, refuses every later change,
// keeps serving reads, and a restart settles the outcome with no bytes lost or shared.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/catalog/object_catalog.h"
#include "lib/catalog/sqlite_fault_vfs_test_util.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

// A source that makes every WAL fsync fail once it has delivered its bytes: only the commit
// that follows fails, not the writes before it.
class ArmingSource : public VectorSource {
 public:
  using VectorSource::VectorSource;
  absl::Status BeforeCommit() override {
    fault_vfs::fail_wal_sync = true;
    return absl::OkStatus();
  }
};

class CatalogFenceTest : public TempStoreTest {
 protected:
  void SetUp() override {
    fault_vfs::Install();
    TempStoreTest::SetUp();
  }
  void TearDown() override {
    TempStoreTest::TearDown();
    fault_vfs::Uninstall();
  }
  // Runs `write` while every WAL fsync fails; returns its status.
  template <typename Write>
  absl::Status WithFailingWalSync(Write write) {
    fault_vfs::fail_wal_sync = true;
    absl::Status s = write();
    fault_vfs::fail_wal_sync = false;
    return s;
  }
  // The store lists exactly the objects of `expected`, each reading back as its bytes.
  void ExpectObjects(const std::map<std::string, std::vector<uint8_t>>& expected) {
    absl::StatusOr<std::vector<ObjectStatus>> all = ListAll(*store_);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(all->size(), expected.size());
    for (const auto& [name, bytes] : expected) {
      absl::StatusOr<std::vector<uint8_t>> got = Get(name);
      ASSERT_TRUE(got.ok()) << name << ": " << got.status();
      EXPECT_EQ(*got, bytes) << name;
    }
  }
};

TEST_F(CatalogFenceTest, AnEncodeWhoseCommitIsUnknownFencesTheStoreUntilARestart) {
  const std::vector<uint8_t> a = RandomBytes(300000, 1);
  const std::vector<uint8_t> b = RandomBytes(200000, 2);
  const std::vector<uint8_t> c = RandomBytes(100000, 3);
  ASSERT_TRUE(Put("a", a).ok());

  // The WAL's fsync fails from the moment the encode commits (its source's BeforeCommit).
  ArmingSource source(b);
  EncodeParams params;
  params.name = "b";
  const absl::Status put = store_->Encode(params, source).status();
  fault_vfs::fail_wal_sync = false;
  ASSERT_TRUE(IsCommitOutcomeUnknown(put)) << put;
  ASSERT_TRUE(store_->Stats().catalog_fenced.has_value());
  EXPECT_NE(store_->Stats().catalog_fenced->find("committing an object"), std::string::npos)
      << *store_->Stats().catalog_fenced;

  // No change is taken, each refusal says to restart; "a" still reads exactly.
  for (const absl::Status& s :
       {Put("c", c).status(), store_->Delete("a").status(), store_->admin().SetMeta("k", "v")}) {
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    EXPECT_NE(s.message().find("restart ecd"), std::string::npos) << s;
  }
  absl::StatusOr<std::vector<uint8_t>> got = Get("a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, a);

  Open();  // A restart settles the outcome: "b" whole or absent, never in part.
  EXPECT_FALSE(store_->Stats().catalog_fenced.has_value());
  if (store_->Stat("b", false, false).ok()) {
    ExpectObjects({{"a", a}, {"b", b}});
  } else {
    ExpectObjects({{"a", a}});
  }
  // Its extents were not reused meanwhile, and are free or used as the catalog says: new
  // objects land beside the old ones without touching their bytes.
  ASSERT_TRUE(Put("c", c).ok());
  got = Get("a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, a);
  got = Get("c");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, c);
}

TEST_F(CatalogFenceTest, ADeleteWhoseCommitIsUnknownFreesNothing) {
  const std::vector<uint8_t> a = RandomBytes(300000, 4);
  const std::vector<uint8_t> b = RandomBytes(300000, 5);
  ASSERT_TRUE(Put("a", a).ok());
  ASSERT_TRUE(Put("b", b).ok());
  const absl::Status del = WithFailingWalSync([&] { return store_->Delete("a").status(); });
  ASSERT_TRUE(IsCommitOutcomeUnknown(del)) << del;
  EXPECT_NE(store_->Stats().catalog_fenced->find("deleting an object"), std::string::npos);
  Open();
  absl::StatusOr<std::vector<uint8_t>> got = Get("b");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, b);
  if (store_->Stat("a", false, /*verify=*/true).ok()) {  // the delete did not land: "a" is whole
    got = Get("a");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, a);
  }
}

TEST_F(CatalogFenceTest, AnUpdateWhoseCommitIsUnknownLeavesOneWholeVersion) {
  std::vector<uint8_t> a = RandomBytes(300000, 6);
  ASSERT_TRUE(Put("a", a).ok());
  const std::vector<uint8_t> patch = RandomBytes(5000, 7);
  const absl::Status update = WithFailingWalSync([&] {
    VectorSource source(patch);
    return store_->Update("a", 1000, source, /*append=*/false).status();
  });
  ASSERT_TRUE(IsCommitOutcomeUnknown(update)) << update;
  EXPECT_NE(store_->Stats().catalog_fenced->find("committing an update"), std::string::npos);
  Open();
  absl::StatusOr<ObjectStatus> st = store_->Stat("a", false, /*verify=*/true);
  ASSERT_TRUE(st.ok()) << st.status();
  if (st->object.version == 2) std::copy(patch.begin(), patch.end(), a.begin() + 1000);
  absl::StatusOr<std::vector<uint8_t>> got = Get("a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, a);
}

}  // namespace
}  // namespace ecd::store
