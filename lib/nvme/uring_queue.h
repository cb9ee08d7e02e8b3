// UringQueue: the execution layer of the simulated NVMe controller. One io_uring ring per
// namespace file carries out data transfers that the controller has already resolved to
// (file offset, host buffer, length) triples, using registered ("fixed") buffers and a
// registered file where it can, and O_DIRECT where the file system supports it.
#ifndef ECD_LIB_NVME_URING_QUEUE_H_
#define ECD_LIB_NVME_URING_QUEUE_H_

#include <liburing.h>
#include <sys/uio.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

struct UringOptions {
  // Ring entries and the most ops the kernel holds at once. A power of two in [1, 4096].
  uint32_t queue_depth = 64;
  // Open with O_DIRECT if the file system supports it; buffered I/O otherwise.
  bool direct = true;
};

// One data transfer or flush. Under O_DIRECT, offset, len and (on older kernels) buf must be
// aligned to the device's logical block size; 4 KiB alignment is always enough.
struct IoOp {
  enum class Kind { kRead, kWrite, kFsync };
  Kind kind = Kind::kRead;
  uint64_t offset = 0;     // Byte offset in the file; ignored for kFsync.
  uint8_t* buf = nullptr;  // Ignored for kFsync. Not owned; must stay valid until reaped.
  uint32_t len = 0;        // At most kMaxIoBytes; ignored for kFsync.
  uint64_t tag = 0;        // Any value; returned unchanged in the op's IoResult.
};

// The outcome of one IoOp, reported exactly once.
//   kRead/kWrite: res == len on success. 0 <= res < len is a short transfer: the file ended
//     (a read at or across end of file) or the kernel stopped accepting bytes; res is the
//     number of bytes moved, from offset, and the caller decides what that means (bytes of buf
//     past res are unspecified: O_DIRECT may fill whole blocks). res < 0 is -errno of the
//     failing piece (bytes an earlier piece moved are then not reported).
//   kFsync: 0 on success, -errno otherwise.
struct IoResult {
  uint64_t tag;
  int32_t res;
};

// Counters for tests and metrics. Every data piece handed to the kernel counts once, so a
// resubmitted remainder counts again (and also in `resubmits`).
struct UringStats {
  uint64_t fixed_rw = 0;   // READ_FIXED / WRITE_FIXED pieces.
  uint64_t plain_rw = 0;   // READ / WRITE pieces (buffer not inside one registered buffer).
  uint64_t fsyncs = 0;     // FSYNC ops.
  uint64_t resubmits = 0;  // Pieces resubmitted after a short transfer, -EAGAIN or -EINTR.
};

// Largest transfer of one IoOp (also the largest registered buffer, as io_uring allows).
inline constexpr uint32_t kMaxIoBytes = 1u << 30;

// Thread safety: internally synchronized; every method may be called from any thread
// concurrently with the others. Ops are not ordered among each other, not even within one
// Submit call: a caller that needs a write durable before an fsync must reap the write first.
// A Reap may return results of ops submitted by other threads; with several reapers, each
// result goes to exactly one of them.
class UringQueue {
 public:
  // Opens `path` (which must exist) read-write. If options.direct, tries O_DIRECT first and falls
  // back to buffered I/O if open() or a 4 KiB probe read at offset 0 fails with EINVAL;
  // direct() tells which was used. Registers the file as fixed file 0 and `buffers` as fixed
  // buffers (index i = buffers[i]). If the kernel refuses the buffers (e.g. ENOMEM from
  // RLIMIT_MEMLOCK, EFAULT for file-backed memory), every op uses plain READ/WRITE,
  // fixed_buffers() is false and buffer_registration_status() says why; Open does not fail for
  // that. REQUIRES: the buffers stay mapped for the life of the queue.
  // Errors: InvalidArgument for a bad queue depth, an empty, null, overlapping or more than
  // 1 GiB buffer, or more than 16384 buffers; NotFound (path in the message) if `path` does not
  // exist; other open/io_uring failures map from errno.
  static absl::StatusOr<std::unique_ptr<UringQueue>> Open(const std::string& path,
                                                          absl::Span<const iovec> buffers,
                                                          const UringOptions& options);

  // Waits for every op still in the kernel (discarding results), then closes the ring and file.
  // REQUIRES: no other thread is inside a method of this object.
  ~UringQueue();

  UringQueue(const UringQueue&) = delete;
  UringQueue& operator=(const UringQueue&) = delete;

  bool direct() const { return direct_; }
  bool fixed_buffers() const { return fixed_buffers_; }
  // OK if the buffers were registered (or none were given); why they were not otherwise.
  const absl::Status& buffer_registration_status() const { return registration_status_; }
  uint32_t queue_depth() const { return depth_; }
  const std::string& path() const { return path_; }

  // Queues `ops` and hands them to the kernel. A read or write whose [buf, buf+len) lies inside
  // one registered buffer becomes READ_FIXED/WRITE_FIXED with that buffer's index (found by
  // binary search); any other becomes plain READ/WRITE. kFsync is a full fsync (data and
  // metadata, not IORING_FSYNC_DATASYNC), so a file grown by a write is durable too.
  // When queue_depth() ops are in the kernel, blocks until some complete (keeping their results
  // for Reap). Errors: InvalidArgument (nothing queued) if an op has a null buf with len > 0,
  // len > kMaxIoBytes or an unknown kind; if the kernel refuses a submission, the error message
  // says how many of `ops` were queued (those complete and are reported as usual).
  absl::Status Submit(absl::Span<const IoOp> ops);

  // Waits until at least `min_results` results are available (0: does not wait) or Wake() is
  // called, then appends every available result to *out. Short transfers are finished here: a
  // piece that moved 0 < n < remaining bytes is resubmitted for the rest, and -EAGAIN/-EINTR
  // pieces are retried (up to 64 times), so each op is reported once (see IoResult).
  // Waits even if fewer ops are outstanding than min_results, since another thread may still
  // submit; use Wake to stop waiting. Errors: those of io_uring_enter (results already
  // available are appended even then). REQUIRES: out != nullptr.
  absl::Status Reap(size_t min_results, std::vector<IoResult>* out);

  // Makes a Reap that is waiting (or, if none is, the next Reap) return with what it has, e.g.
  // for shutdown. Submit is not interrupted: its wait for ring space ends by itself as ops in
  // the kernel complete.
  void Wake();

  // Ops accepted by Submit whose results Reap has not yet returned (in the kernel or completed).
  size_t in_flight() const;

  UringStats stats() const;

 private:
  // One op between Submit and completion; the remaining piece is [buf + done, buf + len).
  struct Slot {
    IoOp op;
    int buf_index = -1;  // Registered buffer holding the op's bytes, or -1 for plain I/O.
    uint32_t done = 0;   // Bytes moved so far.
    uint32_t retries = 0;
  };
  struct Region {  // A registered buffer, for the binary search.
    uintptr_t begin;
    uintptr_t end;
    int index;
  };

  UringQueue(std::string path, int fd, bool direct, uint32_t depth);

  int FindBuffer(const uint8_t* buf, uint32_t len) const;
  // Fills an SQE for the remaining piece of slot `slot`. REQUIRES: mu_ held, SQ has room.
  void PrepareLocked(uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands every prepared SQE to the kernel. REQUIRES: mu_ held.
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Consumes every CQE in the CQ ring, finishing or resubmitting ops. REQUIRES: mu_ held and no
  // other thread waiting in the kernel (waiter_active_ false or the caller is that waiter).
  void DrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Blocks (releasing mu_ while asleep) until done() is true; done() is evaluated under mu_.
  template <typename Pred>
  absl::Status WaitLocked(Pred done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const int fd_;
  const bool direct_;
  const uint32_t depth_;
  bool fixed_buffers_ = false;
  absl::Status registration_status_;
  std::vector<Region> regions_;  // Sorted by begin; non-overlapping.
  io_uring ring_{};
  bool ring_ready_ = false;

  mutable Mutex mu_;
  CondVar cv_;  // Signalled when the CQ was drained or Wake was called.
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);         // queue_depth entries.
  std::vector<uint32_t> free_ ABSL_GUARDED_BY(mu_);      // indexes of unused slots.
  std::deque<IoResult> completed_ ABSL_GUARDED_BY(mu_);  // finished, not yet reaped.
  // A thread is blocked in io_uring_enter waiting for CQEs; only it may consume
  // CQEs until it takes mu_ back, so CQEs that arrive meanwhile do wake it.
  bool waiter_active_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool nop_in_kernel_ ABSL_GUARDED_BY(mu_) = false;  // The Wake NOP has not completed yet.
  UringStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_URING_QUEUE_H_
