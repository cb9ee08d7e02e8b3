// A Namespace kept in a regular file (sparse, created with ftruncate) or a block device, with
// pread/pwrite and fdatasync.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "lib/store/namespace.h"

namespace ecd::store {
namespace {

absl::Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

}  // namespace

absl::Status SyncParentDir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir.assign(1, '.');
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus("fsync directory", dir, err);
  return absl::OkStatus();
}

namespace {

class FileNamespace final : public Namespace {
 public:
  FileNamespace(std::string path, int fd, uint64_t lba_count, uint32_t lba_size)
      : path_(std::move(path)), fd_(fd), lba_count_(lba_count), lba_size_(lba_size) {}
  ~FileNamespace() override { ::close(fd_); }

  uint32_t lba_size() const override { return lba_size_; }
  uint64_t lba_count() const override { return lba_count_; }

  absl::Status Read(uint64_t lba, absl::Span<uint8_t> out) override {
    if (absl::Status s = CheckRange(lba, out.size()); !s.ok()) return s;
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::pread(fd_, out.data() + done, out.size() - done,
                          static_cast<off_t>(lba * lba_size_ + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read", path_, errno);
      }
      if (n == 0) {  // Past the end of a short file: the namespace reads as zeroes there.
        std::memset(out.data() + done, 0, out.size() - done);
        break;
      }
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  absl::Status Write(uint64_t lba, absl::Span<const uint8_t> data) override {
    if (absl::Status s = CheckRange(lba, data.size()); !s.ok()) return s;
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done,
                           static_cast<off_t>(lba * lba_size_ + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    // Linux reports a writeback error to one fdatasync caller only, and the failed pages may be
    // gone: once a flush fails, every later flush fails too, so no request can commit on top.
    if (flush_failed_.load()) {
      return absl::InternalError(absl::StrCat("an earlier flush of ", path_,
                                              " failed; its writes may be lost: fail the device"));
    }
    if (::fdatasync(fd_) != 0) {
      flush_failed_.store(true);
      return ErrnoStatus("fdatasync", path_, errno);
    }
    return absl::OkStatus();
  }

  void Deallocate(uint64_t lba, uint64_t count) override {
    // Give the space back to the file system; reads of the range then return zeroes.
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(lba * lba_size_), static_cast<off_t>(count * lba_size_));
  }

 private:
  absl::Status CheckRange(uint64_t lba, size_t bytes) const {
    if (bytes % lba_size_ != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("I/O of ", bytes, " bytes is not a multiple of the LBA size ", lba_size_));
    }
    const uint64_t n = bytes / lba_size_;
    if (lba > lba_count_ || n > lba_count_ - lba) {
      return absl::OutOfRangeError(absl::StrCat("LBA range [", lba, ", ", lba + n, ") beyond ",
                                                path_, " (", lba_count_, " LBAs)"));
    }
    return absl::OkStatus();
  }

  const std::string path_;
  const int fd_;
  const uint64_t lba_count_;
  const uint32_t lba_size_;
  std::atomic<bool> flush_failed_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Namespace>> OpenFileNamespace(const std::string& path,
                                                             uint64_t size_bytes, uint32_t lba_size,
                                                             bool create) {
  if (lba_size == 0 || size_bytes == 0 || size_bytes % lba_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "namespace size ", size_bytes, " is not a positive multiple of the LBA size ", lba_size));
  }
  bool created = false;
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    created = fd >= 0;
  }
  if (fd < 0) return ErrnoStatus("open namespace", path, errno);

  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus("stat namespace", path, err);
  }
  if (S_ISREG(st.st_mode)) {
    if (created || static_cast<uint64_t>(st.st_size) < size_bytes) {
      if (::ftruncate(fd, static_cast<off_t>(size_bytes)) != 0 || ::fsync(fd) != 0) {
        int err = errno;
        ::close(fd);
        return ErrnoStatus("size namespace", path, err);
      }
    }
    if (created) {
      if (absl::Status s = SyncParentDir(path); !s.ok()) {
        ::close(fd);
        return s;
      }
    }
  } else if (S_ISBLK(st.st_mode)) {
    uint64_t device_bytes = 0;
    if (::ioctl(fd, BLKGETSIZE64, &device_bytes) != 0 || device_bytes < size_bytes) {
      ::close(fd);
      return absl::InvalidArgumentError(absl::StrCat("block device ", path, " holds ", device_bytes,
                                                     " bytes, fewer than the ", size_bytes,
                                                     " configured"));
    }
  } else {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is neither a regular file nor a block device"));
  }
  return std::unique_ptr<Namespace>(new FileNamespace(path, fd, size_bytes / lba_size, lba_size));
}

}  // namespace ecd::store
