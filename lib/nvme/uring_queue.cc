// UringQueue: io_uring setup with O_DIRECT and registered-buffer fallbacks, submission with a
// bounded number of ops in the kernel, and completion handling that finishes short transfers.
//
// Waiting protocol: every ring access happens under mu_, except the blocking
// io_uring_enter(GETEVENTS) itself, which one thread at a time (the "waiter") makes with mu_
// released. While a waiter is in the kernel no other thread consumes CQEs, so a CQE that arrives
// before the waiter enters the kernel is still in the CQ ring and makes the wait return at once.
// Other threads wanting progress sleep on cv_, which the waiter signals after draining the CQ.
//
// The ring is set up without COOP_TASKRUN, DEFER_TASKRUN or SINGLE_ISSUER: ops submitted by one
// thread may be waited for by another, so completion task work must interrupt the submitting
// thread wherever it sleeps (the default TWA_SIGNAL notification does that).
#include "lib/nvme/uring_queue.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {
namespace {

constexpr uint32_t kMaxQueueDepth = 4096;
constexpr size_t kMaxBuffers = 1u << 14;     // IORING_MAX_REG_BUFFERS.
constexpr uint64_t kWakeTag = ~uint64_t{0};  // user_data of the Wake NOP; slots use 0..4095.
constexpr uint32_t kMaxRetries = 64;         // -EAGAIN/-EINTR retries of one piece.
constexpr uint32_t kProbeBytes = 4096;

// Whether a read through an O_DIRECT descriptor is accepted: false only for EINVAL, the error a
// file system without direct I/O support (or with stricter alignment) gives.
bool DirectReadAccepted(int fd) {
  std::unique_ptr<void, decltype(&std::free)> buf(std::aligned_alloc(kProbeBytes, kProbeBytes),
                                                  &std::free);
  if (buf == nullptr) return true;  // Cannot probe; the first real op reports any problem.
  ssize_t n;
  do {
    n = ::pread(fd, buf.get(), kProbeBytes, 0);
  } while (n < 0 && errno == EINTR);
  return !(n < 0 && errno == EINVAL);
}

absl::Status RingError(int neg_errno, const std::string& what, const std::string& path) {
  return absl::ErrnoToStatus(-neg_errno, absl::StrCat(what, " for ", path));
}

}  // namespace

absl::StatusOr<std::unique_ptr<UringQueue>> UringQueue::Open(const std::string& path,
                                                             absl::Span<const iovec> buffers,
                                                             const UringOptions& options) {
  const uint32_t depth = options.queue_depth;
  if (depth == 0 || depth > kMaxQueueDepth || (depth & (depth - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("queue depth ", depth, " is not a power of two in [1, ", kMaxQueueDepth, "]"));
  }
  if (buffers.size() > kMaxBuffers) {
    return absl::InvalidArgumentError(
        absl::StrCat(buffers.size(), " buffers; at most ", kMaxBuffers, " can be registered"));
  }
  std::vector<Region> regions;
  regions.reserve(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const iovec& b = buffers[i];
    if (b.iov_base == nullptr || b.iov_len == 0 || b.iov_len > kMaxIoBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "buffer ", i, " (", b.iov_len, " bytes) is null, empty or larger than 1 GiB"));
    }
    const auto begin = reinterpret_cast<uintptr_t>(b.iov_base);
    regions.push_back(Region{begin, begin + b.iov_len, static_cast<int>(i)});
  }
  std::sort(regions.begin(), regions.end(),
            [](const Region& a, const Region& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < regions.size(); ++i) {
    if (regions[i].begin < regions[i - 1].end) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffers ", regions[i - 1].index, " and ", regions[i].index, " overlap"));
    }
  }

  int fd = -1;
  bool direct = false;
  if (options.direct) {
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_DIRECT);
    if (fd < 0 && errno != EINVAL) {
      return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
    }
    if (fd >= 0 && !DirectReadAccepted(fd)) {
      ::close(fd);
      fd = -1;
    }
    direct = fd >= 0;
  }
  if (fd < 0) {
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  }

  // From here the queue owns fd; its destructor closes it on every error path.
  std::unique_ptr<UringQueue> q(new UringQueue(path, fd, direct, depth));
  if (int rc = io_uring_queue_init(depth, &q->ring_, 0); rc < 0) {
    return RingError(rc, "io_uring_queue_init", path);
  }
  q->ring_ready_ = true;
  if (int rc = io_uring_register_files(&q->ring_, &q->fd_, 1); rc < 0) {
    return RingError(rc, "io_uring_register_files", path);
  }
  if (!buffers.empty()) {
    int rc =
        io_uring_register_buffers(&q->ring_, buffers.data(), static_cast<unsigned>(buffers.size()));
    if (rc < 0) {
      q->registration_status_ = RingError(
          rc, absl::StrCat("io_uring_register_buffers (", buffers.size(), " buffers)"), path);
    } else {
      q->fixed_buffers_ = true;
      q->regions_ = std::move(regions);
    }
  }
  return q;
}

UringQueue::UringQueue(std::string path, int fd, bool direct, uint32_t depth)
    : path_(std::move(path)), fd_(fd), direct_(direct), depth_(depth), slots_(depth) {
  free_.reserve(depth);
  for (uint32_t i = depth; i > 0; --i) free_.push_back(i - 1);
}

UringQueue::~UringQueue() {
  if (ring_ready_) {
    UniqueMutexLock lock(mu_);
    // Buffers of in-kernel ops belong to the caller, who may free them right after this returns.
    (void)WaitLocked([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return free_.size() == depth_ && !nop_in_kernel_;
    });
    lock.Unlock();
    io_uring_queue_exit(&ring_);
  }
  ::close(fd_);
}

int UringQueue::FindBuffer(const uint8_t* buf, uint32_t len) const {
  const auto begin = reinterpret_cast<uintptr_t>(buf);
  auto it = std::upper_bound(regions_.begin(), regions_.end(), begin,
                             [](uintptr_t a, const Region& r) { return a < r.begin; });
  if (it == regions_.begin()) return -1;
  --it;
  return begin + len <= it->end ? it->index : -1;
}

void UringQueue::PrepareLocked(uint32_t slot) {
  Slot& s = slots_[slot];
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // Each slot has at most one SQE queued, so the ring has room unless an earlier submission
    // failed; push those out and try once more.
    (void)io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      completed_.push_back(IoResult{s.op.tag, -EBUSY});
      free_.push_back(slot);
      return;
    }
  }
  if (s.op.kind == IoOp::Kind::kFsync) {
    io_uring_prep_fsync(sqe, 0, 0);
    ++stats_.fsyncs;
  } else {
    uint8_t* buf = s.op.buf + s.done;
    const uint32_t len = s.op.len - s.done;
    const uint64_t offset = s.op.offset + s.done;
    const bool read = s.op.kind == IoOp::Kind::kRead;
    if (s.buf_index >= 0) {
      if (read) {
        io_uring_prep_read_fixed(sqe, 0, buf, len, offset, s.buf_index);
      } else {
        io_uring_prep_write_fixed(sqe, 0, buf, len, offset, s.buf_index);
      }
      ++stats_.fixed_rw;
    } else {
      if (read) {
        io_uring_prep_read(sqe, 0, buf, len, offset);
      } else {
        io_uring_prep_write(sqe, 0, buf, len, offset);
      }
      ++stats_.plain_rw;
    }
  }
  io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
  io_uring_sqe_set_data64(sqe, slot);
}

absl::Status UringQueue::FlushLocked() {
  while (io_uring_sq_ready(&ring_) > 0) {
    const int rc = io_uring_submit(&ring_);
    if (rc == -EINTR) continue;
    if (rc < 0) return RingError(rc, "io_uring_submit", path_);
    if (rc == 0) {
      return absl::InternalError(
          absl::StrCat("io_uring_submit for ", path_, " accepted none of the queued entries"));
    }
  }
  return absl::OkStatus();
}

void UringQueue::DrainLocked() {
  unsigned head;
  io_uring_cqe* cqe;
  unsigned seen = 0;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    ++seen;
    const uint64_t data = io_uring_cqe_get_data64(cqe);
    const int32_t res = cqe->res;
    if (data == kWakeTag) {
      nop_in_kernel_ = false;
      continue;
    }
    const auto slot = static_cast<uint32_t>(data);
    Slot& s = slots_[slot];
    int32_t final_res;
    if (s.op.kind == IoOp::Kind::kFsync) {
      final_res = res;
    } else if ((res == -EAGAIN || res == -EINTR) && s.retries < kMaxRetries) {
      ++s.retries;
      ++stats_.resubmits;
      PrepareLocked(slot);
      continue;
    } else if (res <= 0) {
      // An error, or end of file / no progress: report the error or the bytes moved so far.
      final_res = res < 0 ? res : static_cast<int32_t>(s.done);
    } else {
      s.done += static_cast<uint32_t>(res);
      if (s.done < s.op.len) {
        ++stats_.resubmits;
        PrepareLocked(slot);
        continue;
      }
      final_res = static_cast<int32_t>(s.done);
    }
    completed_.push_back(IoResult{s.op.tag, final_res});
    free_.push_back(slot);
  }
  io_uring_cq_advance(&ring_, seen);
}

template <typename Pred>
absl::Status UringQueue::WaitLocked(Pred done) {
  for (;;) {
    if (!waiter_active_) DrainLocked();
    if (absl::Status s = FlushLocked(); !s.ok()) return s;
    if (done()) return absl::OkStatus();
    if (waiter_active_) {
      cv_.Wait(mu_);
      continue;
    }
    waiter_active_ = true;
    mu_.Unlock();
    const int rc = io_uring_enter(ring_.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, nullptr);
    mu_.Lock();
    waiter_active_ = false;
    DrainLocked();
    cv_.NotifyAll();
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      return RingError(rc, "io_uring_enter (wait)", path_);
    }
  }
}

absl::Status UringQueue::Submit(absl::Span<const IoOp> ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const IoOp& op = ops[i];
    switch (op.kind) {
      case IoOp::Kind::kRead:
      case IoOp::Kind::kWrite:
        if (op.len > kMaxIoBytes || (op.buf == nullptr && op.len > 0)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "op ", i, " (tag ", op.tag, "): ", op.len, " bytes at ",
              reinterpret_cast<uintptr_t>(op.buf), "; a transfer needs a buffer and <= 1 GiB"));
        }
        break;
      case IoOp::Kind::kFsync:
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "op ", i, " (tag ", op.tag, ") has unknown kind ", static_cast<int>(op.kind)));
    }
  }

  MutexLock lock(mu_);
  size_t queued = 0;
  auto annotate = [&](const absl::Status& s) {
    return absl::Status(
        s.code(), absl::StrCat(s.message(), " (", queued, " of ", ops.size(), " ops were queued)"));
  };
  while (queued < ops.size()) {
    if (free_.empty()) {
      if (absl::Status s =
              WaitLocked([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !free_.empty(); });
          !s.ok()) {
        return annotate(s);
      }
    }
    while (queued < ops.size() && !free_.empty()) {
      const IoOp& op = ops[queued];
      const uint32_t slot = free_.back();
      free_.pop_back();
      const int index = op.kind == IoOp::Kind::kFsync ? -1 : FindBuffer(op.buf, op.len);
      slots_[slot] = Slot{op, index, 0, 0};
      PrepareLocked(slot);
      ++queued;
    }
    if (absl::Status s = FlushLocked(); !s.ok()) return annotate(s);
  }
  return absl::OkStatus();
}

absl::Status UringQueue::Reap(size_t min_results, std::vector<IoResult>* out) {
  MutexLock lock(mu_);
  absl::Status s = WaitLocked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return completed_.size() >= min_results || wake_pending_;
  });
  wake_pending_ = false;
  out->insert(out->end(), completed_.begin(), completed_.end());
  completed_.clear();
  return s;
}

void UringQueue::Wake() {
  MutexLock lock(mu_);
  wake_pending_ = true;
  if (waiter_active_ && !nop_in_kernel_) {
    // The waiter sleeps in the kernel until a CQE arrives; a NOP provides one.
    if (io_uring_sqe* sqe = io_uring_get_sqe(&ring_); sqe != nullptr) {
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, kWakeTag);
      nop_in_kernel_ = true;
      (void)FlushLocked();
    }
  }
  cv_.NotifyAll();
}

size_t UringQueue::in_flight() const {
  MutexLock lock(mu_);
  return (depth_ - free_.size()) + completed_.size();
}

UringStats UringQueue::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

}  // namespace ecd::nvme
