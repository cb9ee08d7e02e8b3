// Completion's countdown and its poll-then-sleep wait.
#include "lib/ec/completion.h"

#include "lib/ec/poll.h"
#include "lib/util/mutex.h"

namespace ecd::ec {
void Completion::Done(absl::Status status) {
  if (!status.ok()) {
    MutexLock lock(mu_);
    if (first_error_.ok()) first_error_ = std::move(status);
    failed_.store(true, std::memory_order_release);
  }
  if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    finished_.store(1, std::memory_order_release);
    // The waiter may return (and free this object) as soon as it sees the store above; the
    // notify uses the address only as a futex key, never reading the object.
    finished_.notify_all();
  }
}

absl::Status Completion::Wait(Engine& engine) {
  if (!engine.spare_cpu()) engine.Progress([this] { return ready(); });
  return Wait(kDefaultPoll);
}

absl::Status Completion::Wait(std::chrono::microseconds poll) {
  internal::PollFor(poll, [&] { return finished_.load(std::memory_order_acquire) != 0; });
  while (finished_.load(std::memory_order_acquire) == 0)
    finished_.wait(0, std::memory_order_acquire);
  if (!failed_.load(std::memory_order_acquire)) return absl::OkStatus();
  MutexLock lock(mu_);
  return first_error_;
}

}  // namespace ecd::ec
