// Interrupt: when a request's waits give up. A request that waits (for an object's lock, for
// stripe memory) stops waiting at its deadline or once its caller has gone away, and fails with
// DeadlineExceeded or Cancelled, so that it holds nothing for a caller that no longer wants it.
// lib/ knows no RPC: the daemon fills one from its call (deadline, cancellation).
#ifndef ECD_LIB_STORE_INTERRUPT_H_
#define ECD_LIB_STORE_INTERRUPT_H_

#include <chrono>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "lib/util/mutex.h"

namespace ecd::store {

// How often a wait asks `cancelled`: it cannot be woken by it.
inline constexpr absl::Duration kCancelPoll = absl::Milliseconds(10);

// Thread safety: a const Interrupt may be used from several threads when `cancelled` may.
struct Interrupt {
  absl::Time deadline = absl::InfiniteFuture();
  // True once the caller has gone away; may be empty. Polled while waiting (every kCancelPoll),
  // so it must be cheap and must not block.
  std::function<bool()> cancelled;

  // True when nothing can interrupt: waits may block without polling.
  bool never() const { return deadline == absl::InfiniteFuture() && !cancelled; }
  // OK while the wait may go on; else DeadlineExceeded (the deadline has passed) or Cancelled,
  // each saying it happened while `waiting_for` ("waiting for the lock of \"x\"").
  absl::Status Check(absl::string_view waiting_for) const;
  // The next time a wait that ends at `until` should look at Check again: the earliest of
  // `until`, the deadline and, when `cancelled` is set, kCancelPoll from now.
  absl::Time NextCheck(absl::Time until = absl::InfiniteFuture()) const;
};

// Waits on `cv` (as std::condition_variable::wait) until `done()` is true or `until` has passed,
// and returns OK (the caller asks done() again to tell which), or until `interrupt` fires, and
// returns its Check status. REQUIRES: `mu` held, the mutex that guards what `done` reads. Not
// analysed inside (`done` requires the caller's mutex, which the analysis cannot match to `mu`).
template <typename Done>
absl::Status WaitFor(CondVar& cv, Mutex& mu, const Interrupt& interrupt, absl::Time until,
                     absl::string_view waiting_for, Done done)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  while (!done()) {
    if (absl::Status s = interrupt.Check(waiting_for); !s.ok()) return s;
    const absl::Time now = absl::Now();
    if (now >= until) return absl::OkStatus();
    const absl::Time next = interrupt.NextCheck(until);
    if (next == absl::InfiniteFuture()) {
      cv.Wait(mu);
    } else {
      cv.WaitFor(mu, absl::ToChronoNanoseconds(next - now));
    }
  }
  return absl::OkStatus();
}

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_INTERRUPT_H_
