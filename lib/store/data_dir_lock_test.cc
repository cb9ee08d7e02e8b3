// Tests DataDirLock: one holder per data dir, within a process and across processes, the holder's
// PID named in the refusal, and no lock left behind by a holder that is gone.
#include "lib/store/data_dir_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace ecd::store {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class DataDirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ecd-lock-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/data";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string root_;
  std::string dir_;
};

TEST_F(DataDirLockTest, CreatesTheDirAndWritesThePid) {
  absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(dir_);
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_TRUE(std::filesystem::is_directory(dir_));
  EXPECT_EQ((*lock)->path(), dir_ + "/ecd.lock");
  EXPECT_EQ(ReadFile(dir_ + "/ecd.lock"), absl::StrCat(::getpid(), "\n"));
}

// flock locks belong to an open file description: a second open in the same process conflicts.
TEST_F(DataDirLockTest, ASecondAcquireInThisProcessFailsNamingThePid) {
  absl::StatusOr<std::unique_ptr<DataDirLock>> first = DataDirLock::Acquire(dir_);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<DataDirLock>> second = DataDirLock::Acquire(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.status().message(),
            absl::StrCat("data dir ", dir_, " is in use by ecd PID ", ::getpid(), " (lock file ",
                         dir_, "/ecd.lock); stop it first, or give another --data-dir"));
  // The refusal left the holder's lock and PID alone.
  EXPECT_EQ(ReadFile(dir_ + "/ecd.lock"), absl::StrCat(::getpid(), "\n"));
  EXPECT_FALSE(DataDirLock::Acquire(dir_).ok());
}

TEST_F(DataDirLockTest, IsFreeAgainOnceReleased) {
  {
    absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(dir_);
    ASSERT_TRUE(lock.ok()) << lock.status();
  }
  EXPECT_EQ(ReadFile(dir_ + "/ecd.lock"), "");  // no PID once nobody holds it
  absl::StatusOr<std::unique_ptr<DataDirLock>> again = DataDirLock::Acquire(dir_);
  EXPECT_TRUE(again.ok()) << again.status();
}

// A PID left in the file by a process that is gone does not block: only the flock counts.
TEST_F(DataDirLockTest, AStalePidDoesNotBlock) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ + "/ecd.lock") << "999999\n";
  absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(dir_);
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_EQ(ReadFile(dir_ + "/ecd.lock"), absl::StrCat(::getpid(), "\n"));
}

TEST_F(DataDirLockTest, AnotherProcessHoldsItUntilItDies) {
  int ready[2];
  int hold[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(hold), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::close(hold[1]);
    absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(dir_);
    const char ok = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    char c;
    (void)!::read(hold[0], &c, 1);  // until the parent kills it
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(hold[0]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');

  absl::StatusOr<std::unique_ptr<DataDirLock>> refused = DataDirLock::Acquire(dir_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(absl::StrCat("in use by ecd PID ", child, " ")),
            std::string::npos)
      << refused.status();

  // Killed, it cannot release anything itself: the kernel drops the lock with its descriptor.
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::close(ready[0]);
  ::close(hold[1]);
  EXPECT_EQ(ReadFile(dir_ + "/ecd.lock"), absl::StrCat(child, "\n"));  // its PID is still there
  absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(dir_);
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_EQ(ReadFile(dir_ + "/ecd.lock"), absl::StrCat(::getpid(), "\n"));
}

TEST_F(DataDirLockTest, ALinkInPlaceOfTheLockFileIsNotFollowed) {
  std::filesystem::create_directories(dir_);
  const std::string target = root_ + "/precious";
  std::ofstream(target) << "keep me\n";
  std::filesystem::create_symlink(target, dir_ + "/ecd.lock");
  absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(dir_);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(lock.status().message().find("the lock file " + dir_ + "/ecd.lock is a symbolic link"),
            std::string::npos)
      << lock.status();
  EXPECT_EQ(ReadFile(target), "keep me\n");
}

TEST_F(DataDirLockTest, ADataDirThatIsAFileIsAnError) {
  std::ofstream(dir_) << "x";
  absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(dir_);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(DataDirLock::Acquire("").ok());
}

}  // namespace
}  // namespace ecd::store
