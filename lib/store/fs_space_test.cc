// Tests the file-system space claims (FsSpace) and a store on a file system that fills up: early
// RESOURCE_EXHAUSTED with the reserve kept, failed and uncommitted writes punched, repairs
// allowed into half the reserve, free extents given back at start-up, and ENOSPC from a
// namespace file reported as the file system being full (on a small tmpfs, when mounts are
// allowed).
#include "lib/devices/fs_space.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/fault/fault_namespace.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Bytes the files under `dir` take on disk (st_blocks), optionally only those ending in `suffix`.
uint64_t DiskBytes(const std::filesystem::path& dir, const std::string& suffix = "") {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    struct stat st {};
    if (!e.is_regular_file() || ::stat(e.path().c_str(), &st) != 0) continue;
    if (!suffix.empty() && !absl::EndsWith(e.path().string(), suffix)) continue;
    total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// Bytes of the files under `dir` ending in `suffix` that hold data (SEEK_DATA): unlike
// st_blocks, leaves out the file system's own blocks (an extent tree grows as a file's extents
// split) and space reserved without being written.
uint64_t DataBytes(const std::filesystem::path& dir, const std::string& suffix) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || !absl::EndsWith(e.path().string(), suffix)) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    for (off_t at = 0;;) {
      const off_t data = ::lseek(fd, at, SEEK_DATA);
      if (data < 0) break;
      at = ::lseek(fd, data, SEEK_HOLE);
      total += static_cast<uint64_t>(at - data);
    }
    ::close(fd);
  }
  return total;
}

class FsSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ecd_fs_space_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "devices");
    for (const char* f : {"catalog.db", "devices/nvme0.ns", "devices/nvme1.ns"}) {
      int fd = ::open((dir_ / f).c_str(), O_CREAT | O_WRONLY, 0600);
      ASSERT_GE(fd, 0);
      ::close(fd);
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<FsSpace> Make(uint64_t reserve) {
    auto space = std::make_unique<FsSpace>(reserve, [this](const std::string& path) {
      ++stats_;
      return absl::StatusOr<FsStat>(FsStat{.size_bytes = 100 * kMiB, .free_bytes = free_.load()});
    });
    EXPECT_TRUE(space->SetCatalog((dir_ / "catalog.db").string()).ok());
    space->SetDevice(0, (dir_ / "devices/nvme0.ns").string());
    space->SetDevice(1, (dir_ / "devices/nvme1.ns").string());
    return space;
  }

  std::filesystem::path dir_;
  std::atomic<uint64_t> free_{10 * kMiB};
  std::atomic<int> stats_{0};
};

TEST_F(FsSpaceTest, ClaimsLeaveTheReserveFree) {
  auto space = Make(4 * kMiB);
  const ClaimedExtent a{0, 0, 256, kMiB}, b{1, 0, 256, kMiB};
  // 10 MiB free, 4 MiB reserve: 6 MiB may be claimed.
  ASSERT_TRUE(space->Claim({a, b}, SpaceUse::kNewData).ok());  // 2 MiB
  std::vector<ClaimedExtent> four;
  for (uint64_t i = 1; i <= 4; ++i) four.push_back({0, i * 256, 256, kMiB});
  ASSERT_TRUE(space->Claim(four, SpaceUse::kNewData).ok());  // 6 MiB claimed
  const ClaimedExtent c{1, 256, 1, 4096};
  absl::Status full = space->Claim({&c, 1}, SpaceUse::kNewData);
  ASSERT_TRUE(IsFileSystemFull(full)) << full;
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(full.message(), "nearly full")) << full;
  EXPECT_TRUE(absl::StrContains(full.message(), "--fs-reserve")) << full;
  EXPECT_TRUE(absl::StrContains(full.message(), dir_.string())) << full;  // the data dir
  EXPECT_TRUE(absl::StrContains(full.message(), "ecctl rm")) << full;
  // A repair may use half the reserve.
  ASSERT_TRUE(space->Claim({&c, 1}, SpaceUse::kRepair).ok());
  // The writes land: the file system's own count takes the bytes over from the claims.
  free_ = 10 * kMiB - 2 * kMiB;
  space->Release(0, 0, 256);
  space->Release(1, 0, 256);
  std::vector<FileSystemUsage> usage = space->Usage();
  ASSERT_EQ(usage.size(), 1u);  // one file system holds all three files
  EXPECT_TRUE(usage[0].catalog);
  EXPECT_EQ(usage[0].devices, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(usage[0].free_bytes, 8 * kMiB);
  EXPECT_EQ(usage[0].size_bytes, 100 * kMiB);
  EXPECT_EQ(usage[0].reserve_bytes, 4 * kMiB);
  EXPECT_EQ(usage[0].claimed_bytes, 4 * kMiB + 4096);
  EXPECT_FALSE(space->Claim({&a, 1}, SpaceUse::kNewData).ok());
  // Freed unwritten: the claim ends too. Parts without a claim are ignored.
  space->Release(0, 200, 2000);
  space->Release(1, 256, 1);
  space->Release(7, 0, 10);
  EXPECT_EQ(space->Usage()[0].claimed_bytes, 0u);
  EXPECT_TRUE(space->Claim({&a, 1}, SpaceUse::kNewData).ok());
}

TEST_F(FsSpaceTest, ANamespaceThatIsNotAFileClaimsNothing) {
  auto space = Make(4 * kMiB);
  free_ = 0;  // Full; the catalog's file system still refuses new data.
  space->SetDevice(0, "/dev/null");
  const ClaimedExtent a{0, 0, 256, kMiB};
  EXPECT_TRUE(IsFileSystemFull(space->Claim({&a, 1}, SpaceUse::kNewData)));
  free_ = 5 * kMiB;
  ASSERT_TRUE(space->Claim({&a, 1}, SpaceUse::kNewData).ok());
  EXPECT_EQ(space->Usage()[0].claimed_bytes, 0u);
  EXPECT_EQ(space->Usage()[0].devices, (std::vector<uint32_t>{1}));
  // A device reopened at another path drops its claims.
  const ClaimedExtent b{1, 0, 256, kMiB};
  ASSERT_TRUE(space->Claim({&b, 1}, SpaceUse::kNewData).ok());
  EXPECT_EQ(space->Usage()[0].claimed_bytes, kMiB);
  space->SetDevice(1, (dir_ / "devices/nvme1.ns").string());
  EXPECT_EQ(space->Usage()[0].claimed_bytes, 0u);
}

TEST_F(FsSpaceTest, AWriteCompletionEndsItsClaim) {
  std::shared_ptr<FsSpace> space = Make(kMiB);
  const std::string path = (dir_ / "devices/nvme0.ns").string();
  std::filesystem::remove(path);
  auto opened = OpenNvmeNamespace(path, 64 * 4096, 4096, /*create=*/true);
  ASSERT_TRUE(opened.ok()) << opened.status();
  space->SetDevice(0, path);
  std::unique_ptr<Namespace> ns = ReleaseClaimsOnWrite(*std::move(opened), space, 0);
  const ClaimedExtent a{0, 8, 2, 8192}, b{0, 20, 1, 4096};
  ASSERT_TRUE(space->Claim({a, b}, SpaceUse::kNewData).ok());
  EXPECT_EQ(space->Usage()[0].claimed_bytes, 12288u);
  const std::vector<uint8_t> two(8192, 0x5a);
  ASSERT_TRUE(ns->Write(8, two).ok());
  EXPECT_EQ(space->Usage()[0].claimed_bytes, 4096u);
  std::promise<absl::Status> done;
  ns->WriteAsync(20, absl::MakeConstSpan(two.data(), 4096),
                 [&done](absl::Status s) { done.set_value(std::move(s)); });
  ASSERT_TRUE(done.get_future().get().ok());
  EXPECT_EQ(space->Usage()[0].claimed_bytes, 0u);
  // The file's allocated ranges: the two writes, nothing else.
  EXPECT_EQ(ns->AllocatedRanges(), (std::vector<Namespace::LbaRange>{{8, 2}, {20, 1}}));
  ns->Deallocate(8, 2);
  EXPECT_EQ(ns->AllocatedRanges(), (std::vector<Namespace::LbaRange>{{20, 1}}));
}

// A store whose file system holds `capacity` bytes of blocks more than its namespace files took
// when it opened (the catalog is left out, so that the numbers are exact).
class FullFileSystemTest : public TempStoreTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ecd_store_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    tweak_ = [this](StoreOptions& o) {
      o.fs_reserve_bytes = reserve_;
      o.fs_stat = [this](const std::string&) -> absl::StatusOr<FsStat> {
        return FsStat{.size_bytes = capacity_ + base_, .free_bytes = Free()};
      };
    };
    Open();
    base_ = NamespaceBytes();
  }
  uint64_t Free() {
    const uint64_t used = NamespaceBytes();
    return used >= capacity_ + base_ ? 0 : capacity_ + base_ - used;
  }
  uint64_t NamespaceBytes() { return DiskBytes(dir_ / "devices", ".ns"); }
  // The namespaces' bytes that hold data: what writes add and punches take back, without the
  // file system's own blocks (NamespaceBytes counts those, and they vary).
  uint64_t DataOnDisk() { return DataBytes(dir_ / "devices", ".ns"); }
  // Stores 60 KiB objects (4 stripes of 4+2 4-KiB blocks: 96 KiB) until one is refused; returns
  // their names.
  std::vector<std::string> Fill(absl::Status* refusal) {
    std::vector<std::string> names;
    for (int i = 0; i < 1000; ++i) {
      const std::string name = absl::StrCat("o", i);
      const uint64_t before = DataOnDisk();
      auto o = Put(name, RandomBytes(60 << 10, i));
      if (!o.ok()) {
        *refusal = o.status();
        // Nothing of the refused encode stays on disk: what it wrote was punched.
        EXPECT_EQ(DataOnDisk(), before);
        return names;
      }
      names.push_back(name);
    }
    ADD_FAILURE() << "the file system never filled";
    return names;
  }

  uint64_t capacity_ = 3 * kMiB;
  uint64_t reserve_ = kMiB;
  uint64_t base_ = 0;
};

TEST_F(FullFileSystemTest, EncodesAreRefusedBeforeTheReserveAndDeletesMakeRoom) {
  absl::Status refusal;
  const std::vector<std::string> names = Fill(&refusal);
  ASSERT_TRUE(IsFileSystemFull(refusal)) << refusal;
  EXPECT_TRUE(absl::StrContains(refusal.message(), "nearly full")) << refusal;
  // 21 objects of 96 KiB of blocks fit in the 2 MiB above the reserve (20 when the file
  // system's own blocks, an extent tree growing as the files' extents split, took some of it);
  // the next got one stripe in, then was refused and gave it back. The reserve is untouched.
  EXPECT_GE(names.size(), 20u);
  EXPECT_LE(names.size(), 21u);
  EXPECT_GE(Free(), reserve_);
  EXPECT_LT(Free(), reserve_ + 2 * 96 * 1024);
  EXPECT_EQ(store_->Stat("o" + std::to_string(names.size()), false, false).status().code(),
            absl::StatusCode::kNotFound);
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(Get(names[i]).value(), RandomBytes(60 << 10, static_cast<uint32_t>(i)));
  }
  auto fs = store_->Stats().file_systems;
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].free_bytes, Free());
  EXPECT_EQ(fs[0].reserve_bytes, reserve_);
  EXPECT_EQ(fs[0].claimed_bytes, 0u);  // every write made is counted by the file system
  EXPECT_EQ(fs[0].devices.size(), 8u);
  // A delete gives the space back at once (punched), and encodes go on.
  const uint64_t before = NamespaceBytes();
  ASSERT_TRUE(store_->Delete(names[0]).ok());
  ASSERT_TRUE(store_->Delete(names[1]).ok());
  // 4 stripes of 6 blocks each, give or take a file-system block of each namespace file's
  // extent tree (the tombstones go to the record logs' space, taken at start).
  EXPECT_NEAR(static_cast<double>(before - NamespaceBytes()), 2 * 6 * 4 * 4096.0, 8 * 4096.0);
  ASSERT_TRUE(Put("again", RandomBytes(60 << 10, 99)).ok());
  // A restart works, and everything stored is there.
  Open();
  EXPECT_EQ(Get("again").value(), RandomBytes(60 << 10, 99));
  EXPECT_EQ(Get(names.back()).value(),
            RandomBytes(60 << 10, static_cast<uint32_t>(names.size() - 1)));
}

TEST_F(FullFileSystemTest, ARefusedUpdateKeepsTheOldVersionAndNothingOnDisk) {
  absl::Status refusal;
  const std::vector<std::string> names = Fill(&refusal);
  ASSERT_TRUE(IsFileSystemFull(refusal)) << refusal;
  const uint64_t before = DataOnDisk();
  const std::vector<uint8_t> patch = RandomBytes(2 << 20, 7);  // appends ~3 MiB of blocks
  VectorSource src(patch);
  auto r = store_->Update(names[3], 1000, src, /*append=*/true);
  ASSERT_TRUE(IsFileSystemFull(r.status())) << r.status();
  EXPECT_EQ(DataOnDisk(), before);
  auto st = store_->Stat(names[3], false, /*verify=*/true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->object.version, 1u);
  EXPECT_EQ(st->degraded_stripes, 0u);
  EXPECT_EQ(Get(names[3]).value(), RandomBytes(60 << 10, 3));
  // A small update still fits.
  const std::vector<uint8_t> small = RandomBytes(5000, 8);
  VectorSource small_src(small);
  ASSERT_TRUE(store_->Update(names[3], 100, small_src, false).ok());
}

TEST_F(FullFileSystemTest, ARepairMayUseHalfTheReserve) {
  absl::Status refusal;
  const std::vector<std::string> names = Fill(&refusal);
  ASSERT_TRUE(IsFileSystemFull(refusal)) << refusal;
  // Take what is left down to 3/4 of the reserve: no encode fits, a rebuild of one device's
  // blocks of one object (4 blocks, 16 KiB) does.
  const uint64_t free_now = Free();
  ASSERT_GT(free_now, reserve_ * 3 / 4);
  capacity_ -= free_now - reserve_ * 3 / 4;
  EXPECT_TRUE(IsFileSystemFull(Put("tiny", RandomBytes(100, 1)).status()));
  ASSERT_TRUE(store_->admin().SetDeviceState(2, DeviceState::kFailed).ok());
  RecoverOptions options;
  options.check_all = false;
  auto p = store_->Recover(names[5], nullptr, options);
  ASSERT_TRUE(p.ok()) << p.status();
  auto st = store_->Stat(names[5], false, false);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 0u);
  // Below half the reserve even a repair is refused, naming the file system.
  capacity_ -= Free() - reserve_ / 4;
  ASSERT_TRUE(store_->admin().SetDeviceState(3, DeviceState::kFailed).ok());
  auto refused = store_->Recover(names[6], nullptr, options);
  ASSERT_TRUE(IsFileSystemFull(refused.status())) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "half of --fs-reserve"))
      << refused.status();
  EXPECT_EQ(Get(names[6]).value(), RandomBytes(60 << 10, 6));  // degraded, still readable
}

TEST_F(FullFileSystemTest, FreeExtentsThatHoldBytesAreGivenBackAtStart) {
  ASSERT_TRUE(Put("kept", RandomBytes(60 << 10, 1)).ok());
  // Bytes in free extents, as a crash in the middle of an encode leaves them: LBAs 1000.. of
  // every device are free.
  const std::vector<uint8_t> junk(64 << 10, 0x77);
  for (int d = 0; d < 8; ++d) {
    const std::string path = (dir_ / "devices" / ("nvme" + std::to_string(d) + ".ns")).string();
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 1000 * 4096),
              static_cast<ssize_t>(junk.size()));
    ::fsync(fd);
    ::close(fd);
  }
  const uint64_t with_junk = DataOnDisk();
  Open();
  EXPECT_EQ(with_junk - DataOnDisk(), 8 * junk.size());
  BlockRecord at_1000;
  at_1000.device = 4;
  at_1000.lba = 1000;
  at_1000.lba_count = 16;
  EXPECT_EQ(Snapshot(at_1000), std::vector<uint8_t>(16 * 4096, 0));
  EXPECT_EQ(Get("kept").value(), RandomBytes(60 << 10, 1));
}

TEST_F(FullFileSystemTest, AnEncodeThatFailsOnAWriteLeavesNothingOnDisk) {
  std::shared_ptr<FaultRegistry> registry;
  Open(FaultInjectingFactory(NvmeNamespaceFactory({}), {}, 5, &registry));
  ASSERT_TRUE(Put("first", RandomBytes(60 << 10, 1)).ok());
  const uint64_t before = DataOnDisk();
  absl::StatusOr<std::vector<FaultRule>> rule = ParseFaultSpec("write:eio:after=6");
  ASSERT_TRUE(rule.ok());
  registry->SetRules(3, *rule);
  auto o = Put("doomed", RandomBytes(400 << 10, 2));  // 25 stripes: every device, many writes
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kDataLoss) << o.status();
  EXPECT_EQ(DataOnDisk(), before);
  registry->SetRules(3, {});
  // An update whose write fails gives back what it wrote too.
  absl::StatusOr<std::vector<FaultRule>> every = ParseFaultSpec("write:eio");
  ASSERT_TRUE(every.ok());
  registry->SetRules(5, *every);
  const std::vector<uint8_t> patch = RandomBytes(40 << 10, 3);
  VectorSource src(patch);
  EXPECT_FALSE(store_->Update("first", 0, src, /*append=*/false).ok());
  EXPECT_EQ(DataOnDisk(), before);
  EXPECT_EQ(Get("first").value(), RandomBytes(60 << 10, 1));
}

// ENOSPC from a namespace file on a real, full file system: a 256 KiB tmpfs under a 1 MiB
// namespace. Needs permission to mount (root); skipped otherwise.
TEST(NamespaceOnAFullFileSystem, WritesFailAsTheFileSystemBeingFull) {
  const std::filesystem::path mnt =
      std::filesystem::temp_directory_path() / ("ecd_enospc_" + std::to_string(::getpid()));
  std::filesystem::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=256k") != 0) {
    std::filesystem::remove_all(mnt);
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  {
    const std::string path = (mnt / "nvme0.ns").string();
    auto ns = OpenNvmeNamespace(path, 1 << 20, 4096, /*create=*/true);
    ASSERT_TRUE(ns.ok()) << ns.status();
    const std::vector<uint8_t> block(64 << 10, 0x42);
    absl::Status s;
    uint64_t lba = 0;
    for (; lba < 256 && s.ok(); lba += 16) s = (*ns)->Write(lba, block);
    ASSERT_FALSE(s.ok()) << "a 256 KiB tmpfs took 1 MiB";
    EXPECT_TRUE(IsFileSystemFull(s)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "is full")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "ENOSPC")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), path)) << s;
    std::promise<absl::Status> done;
    (*ns)->WriteAsync(lba, block, [&done](absl::Status st) { done.set_value(std::move(st)); });
    absl::Status async = done.get_future().get();
    EXPECT_TRUE(IsFileSystemFull(async)) << async;
  }
  ::umount2(mnt.c_str(), MNT_DETACH);
  std::filesystem::remove_all(mnt);
}

}  // namespace
}  // namespace ecd::store
