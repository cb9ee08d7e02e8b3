// The store's namespaces: a regular file (sparse, created with ftruncate) or a block device,
// reached only through the NVMe data path (PRPs, the controller model and io_uring).
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
#include "absl/strings/str_format.h"
#include "lib/devices/fs_space.h"
#include "lib/devices/namespace.h"
#include "lib/nvme/device.h"

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

// The store's view of a device: every call becomes NVMe commands over PRP-described host pages,
// executed by the controller model through io_uring (lib/nvme/device.h).
class NvmeNamespace final : public Namespace {
 public:
  NvmeNamespace(std::string path, int fd, bool regular_file, std::unique_ptr<nvme::Device> device)
      : path_(std::move(path)), fd_(fd), regular_file_(regular_file), device_(std::move(device)) {}
  ~NvmeNamespace() override {
    device_.reset();
    ::close(fd_);
  }

  uint32_t lba_size() const override { return device_->lba_size(); }
  uint64_t lba_count() const override { return device_->lba_count(); }

  absl::Status Read(uint64_t lba, absl::Span<uint8_t> out) override {
    if (absl::Status s = CheckRange(lba, out.size()); !s.ok()) return s;
    return device_->Read(lba, out);
  }

  absl::Status Write(uint64_t lba, absl::Span<const uint8_t> data) override {
    if (absl::Status s = CheckRange(lba, data.size()); !s.ok()) return s;
    return WriteStatus(device_->Write(lba, data), lba, data.size());
  }

  void ReadAsync(uint64_t lba, absl::Span<uint8_t> out, Done done) override {
    if (absl::Status s = CheckRange(lba, out.size()); !s.ok()) return done(std::move(s));
    device_->ReadAsync(lba, out, std::move(done));
  }

  void WriteAsync(uint64_t lba, absl::Span<const uint8_t> data, Done done) override {
    if (absl::Status s = CheckRange(lba, data.size()); !s.ok()) return done(std::move(s));
    if (!regular_file_) return device_->WriteAsync(lba, data, std::move(done));
    device_->WriteAsync(lba, data,
                        [this, lba, bytes = data.size(), done = std::move(done)](absl::Status s) {
                          done(WriteStatus(std::move(s), lba, bytes));
                        });
  }

  absl::Status Flush() override {
    // Linux reports a writeback error to one fsync caller only, and the failed pages may be
    // gone: once a flush fails, every later flush fails too, so no request can commit on top.
    if (flush_failed_.load()) {
      return absl::InternalError(absl::StrCat("an earlier flush of ", path_,
                                              " failed; its writes may be lost: fail the device"));
    }
    absl::Status s = device_->Flush();
    if (!s.ok()) flush_failed_.store(true);
    return s;
  }

  void Deallocate(uint64_t lba, uint64_t count) override {
    // Give the space back to the file system (the effect of an NVMe Deallocate); reads of the
    // range then return zeroes.
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(lba * lba_size()), static_cast<off_t>(count * lba_size()));
  }

  absl::Status Reserve(uint64_t lba, uint64_t count) override {
    if (!regular_file_) return absl::OkStatus();
    if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(lba * lba_size()),
                    static_cast<off_t>(count * lba_size())) == 0 ||
        errno == EOPNOTSUPP) {
      return absl::OkStatus();
    }
    const int error = errno;
    const std::string what = absl::StrCat("reserving LBAs [", lba, ", ", lba + count, ") of ",
                                          path_, ": ", std::strerror(error));
    if (error == ENOSPC) return absl::ResourceExhaustedError(what);
    return absl::InternalError(what);
  }

  std::vector<LbaRange> AllocatedRanges() const override {
    std::vector<LbaRange> out;
    if (!regular_file_) return out;
    const uint64_t lbs = lba_size();
    const off_t end = static_cast<off_t>(size_bytes());
    off_t at = 0;
    while (at < end) {
      const off_t data = ::lseek(fd_, at, SEEK_DATA);
      if (data < 0 || data >= end) break;  // ENXIO: no data past `at`
      off_t hole = ::lseek(fd_, data, SEEK_HOLE);
      if (hole < 0 || hole > end) hole = end;
      const uint64_t first = static_cast<uint64_t>(data) / lbs;
      const uint64_t last = (static_cast<uint64_t>(hole) + lbs - 1) / lbs;
      if (!out.empty() && out.back().lba + out.back().count >= first) {
        out.back().count = last - out.back().lba;
      } else {
        out.push_back({first, last - first});
      }
      at = hole;
    }
    return out;
  }

  std::vector<std::pair<std::string, uint64_t>> Counters() const override {
    const nvme::ControllerStats s = device_->stats();
    const nvme::TransferStats t = device_->transfer_stats();
    std::vector<std::pair<std::string, uint64_t>> c = {
        {"nvme_read_commands", s.reads},
        {"nvme_write_commands", s.writes},
        {"nvme_flush_commands", s.flushes},
        {"nvme_bytes_read", s.bytes_read},
        {"nvme_bytes_written", s.bytes_written},
        {"nvme_io_uring_ops", s.io_ops},
        {"nvme_io_uring_fixed_ops", s.fixed_io_ops},
        {"nvme_io_uring_plain_ops", s.plain_io_ops},
        {"nvme_prp_data_segments", s.data_segments},
        {"nvme_prp_sets", s.prp_sets},
        {"nvme_prp_fetches_ping", s.fetch.fills_ping},
        {"nvme_prp_fetches_pong", s.fetch.fills_pong},
        {"nvme_prp_refills", s.fetch.refills},
        {"nvme_prp_list_reads", s.fetch.host_reads},
        {"nvme_in_flight", s.in_flight},
        {"nvme_direct_io", s.direct ? 1u : 0u},
        {"nvme_fixed_buffers", s.fixed_buffers ? 1u : 0u},
        {"nvme_zero_copy_commands", t.zero_copy_commands},
        {"nvme_staged_commands", t.staged_commands},
    };
    for (const auto& [field, n] : s.errors) {
      const nvme::NvmeStatus st = nvme::NvmeStatus::FromField(field);
      c.emplace_back(absl::StrFormat("nvme_errors_sct%x_sc%02x", st.sct, st.sc), n);
    }
    return c;
  }

 private:
  absl::Status CheckRange(uint64_t lba, size_t bytes) const {
    const uint32_t lbs = device_->lba_size();
    if (bytes % lbs != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("I/O of ", bytes, " bytes is not a multiple of the LBA size ", lbs));
    }
    const uint64_t n = bytes / lbs;
    if (lba > lba_count() || n > lba_count() - lba) {
      return absl::OutOfRangeError(absl::StrCat("LBA range [", lba, ", ", lba + n, ") beyond ",
                                                path_, " (", lba_count(), " LBAs)"));
    }
    return absl::OkStatus();
  }

  // A full file system fails a write of a file namespace with NVMe Capacity Exceeded (ENOSPC):
  // that is the file system under the namespace being full, not the device, so say so.
  absl::Status WriteStatus(absl::Status s, uint64_t lba, size_t bytes) const {
    if (!regular_file_ || !absl::IsResourceExhausted(s)) return s;
    return FileSystemFullError(absl::StrCat(
        "the file system holding namespace ", path_, " is full: writing LBAs [", lba, ", ",
        lba + bytes / lba_size(),
        ") failed with ENOSPC (no space left on device); the request keeps nothing it wrote. "
        "Delete objects (`ecctl rm NAME`) or free space on that file system; ecd stops taking "
        "new data earlier when --fs-reserve leaves more room"));
  }

  const std::string path_;
  const int fd_;  // kept for Deallocate and AllocatedRanges
  const bool regular_file_;
  std::unique_ptr<nvme::Device> device_;
  std::atomic<bool> flush_failed_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Namespace>> OpenNvmeNamespace(const std::string& path,
                                                             uint64_t size_bytes, uint32_t lba_size,
                                                             bool create,
                                                             const nvme::DeviceOptions& options) {
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
    if (!created && static_cast<uint64_t>(st.st_size) < size_bytes) {
      ::close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat("namespace ", path, " holds ", st.st_size, " bytes, fewer than the ",
                       size_bytes, " it was created with: it was cut short or replaced"));
    }
    if (created) {
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
  nvme::DeviceOptions o = options;
  // O_DIRECT needs LBA-aligned offsets that the file system can honour; below 4 KiB LBAs many
  // cannot, so those namespaces use the page cache (and fsync for Flush) instead.
  if (lba_size % 4096 != 0) o.controller.direct = false;
  auto device = nvme::Device::Open(path, lba_size, size_bytes / lba_size, o);
  if (!device.ok()) {
    ::close(fd);
    return device.status();
  }
  return std::unique_ptr<Namespace>(
      new NvmeNamespace(path, fd, S_ISREG(st.st_mode), *std::move(device)));
}

NamespaceFactory NvmeNamespaceFactory(const nvme::DeviceOptions& options) {
  return [options](const std::string& path, uint64_t size, uint32_t lba_size, bool create) {
    return OpenNvmeNamespace(path, size, lba_size, create, options);
  };
}

}  // namespace ecd::store
