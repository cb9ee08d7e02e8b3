// IoBatch: a group of asynchronous namespace I/Os (Namespace::ReadAsync/WriteAsync) that the
// caller starts together, so that the blocks of a stripe move on all their devices at once,
// and then waits for as one.
#ifndef ECD_LIB_STORE_IO_BATCH_H_
#define ECD_LIB_STORE_IO_BATCH_H_

#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "absl/status/status.h"
#include "lib/devices/namespace.h"

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
      std::lock_guard lock(mu_);
      ++pending_;
    }
    return [this, status](absl::Status s) {
      std::lock_guard lock(mu_);
      *status = std::move(s);
      if (--pending_ == 0) idle_.notify_all();
    };
  }

  // Blocks until every tracked I/O has completed (at once if none is pending).
  void Wait() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  size_t pending_ = 0;  // guarded by mu_
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_IO_BATCH_H_
