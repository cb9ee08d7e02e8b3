// IoBatch: a group of asynchronous namespace I/Os (Namespace::ReadAsync/WriteAsync) that the
// caller starts together, so that the blocks of a stripe move on all their devices at once,
// and then waits for as one.
#ifndef ECD_LIB_STORE_IO_BATCH_H_
#define ECD_LIB_STORE_IO_BATCH_H_

#include <cstddef>

#include "absl/status/status.h"
#include "lib/devices/namespace.h"
#include "lib/util/mutex.h"

namespace ecd::store {

// Thread safety: Track and Wait are called by the owner; the callbacks Track returns may run on
// any thread. The destructor waits for every tracked I/O, so buffers and statuses the I/Os use
// must outlive the batch.
class IoBatch {
 public:
  IoBatch() = default;
  ~IoBatch() { Wait(); }
  IoBatch(const IoBatch&) = delete;
  IoBatch& operator=(const IoBatch&) = delete;

  // The completion callback for one more I/O: it stores the I/O's status in *status. Pass it to
  // exactly one ReadAsync or WriteAsync call; it must run exactly once, or Wait never returns.
  // *status may be read once Wait has returned. REQUIRES: *status outlives the I/O.
  Namespace::Done Track(absl::Status* status) {
    {
      MutexLock lock(mu_);
      ++pending_;
    }
    return [this, status](absl::Status s) {
      MutexLock lock(mu_);
      *status = std::move(s);
      if (--pending_ == 0) idle_.NotifyAll();
    };
  }

  // Blocks until every tracked I/O has completed (at once if none is pending).
  void Wait() {
    MutexLock lock(mu_);
    idle_.Wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pending_ == 0; });
  }

 private:
  Mutex mu_;
  CondVar idle_;
  size_t pending_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_IO_BATCH_H_
