// DataDirLock: one ecd per data dir, by an flock on DATA_DIR/ecd.lock that names its holder.
#include "lib/store/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/util/log.h"

namespace ecd::store {
namespace {

absl::Status Errno(const std::string& what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
}

// The PID the lock file names, if it holds one.
std::optional<pid_t> ReadPid(int fd) {
  char buf[32];
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return std::nullopt;
  pid_t pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(buf, n)), &pid) || pid <= 0) {
    return std::nullopt;
  }
  return pid;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir) {
  if (data_dir.empty()) return absl::InvalidArgumentError("data dir is empty");
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("create data dir ", data_dir, ": ", ec.message()));
  std::string path = (std::filesystem::path(data_dir) / kDataDirLockFile).string();
  // O_NOFOLLOW: the file is truncated and written, so never through a link to another file.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && errno == ELOOP) {
    return absl::InternalError(
        absl::StrCat("the lock file ", path, " is a symbolic link; remove it (ecd makes its own)"));
  }
  if (fd < 0) return Errno(absl::StrCat("open the lock file ", path), errno);
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) {
      ::close(fd);
      return Errno(absl::StrCat("lock ", path), err);
    }
    // The holder writes its PID just after it locks: give it a moment to.
    std::optional<pid_t> holder = ReadPid(fd);
    for (int i = 0; i < 50 && !holder.has_value(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      holder = ReadPid(fd);
    }
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("data dir ", data_dir, " is in use by ",
                     holder.has_value() ? absl::StrCat("ecd PID ", *holder) : "another ecd",
                     " (lock file ", path, "); stop it first, or give another --data-dir"));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  ssize_t written = -1;
  if (::ftruncate(fd, 0) == 0) written = ::pwrite(fd, pid.data(), pid.size(), 0);
  if (written != static_cast<ssize_t>(pid.size())) {
    const int err = written < 0 ? errno : EIO;  // a short write sets no errno
    if (err == ENOSPC || err == EDQUOT) {
      // The lock is the flock; the PID only names its holder. A full file system must not
      // stop the start that deletes make room on.
      (void)!::ftruncate(fd, 0);
      Log(LogLevel::kWarning, "the file system is full: the lock file %s does not name this PID",
          path);
      return std::unique_ptr<DataDirLock>(new DataDirLock(std::move(path), fd));
    }
    ::close(fd);
    return Errno(absl::StrCat("write the PID into the lock file ", path), err);
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(std::move(path), fd));
}

DataDirLock::~DataDirLock() {
  (void)!::ftruncate(fd_, 0);
  ::close(fd_);  // Releases the flock.
}

}  // namespace ecd::store
