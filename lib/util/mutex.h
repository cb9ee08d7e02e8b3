// Mutexes whose lock rules the compiler checks: thin wrappers over std::mutex and
// std::shared_mutex that carry clang's capability attributes (absl/base/thread_annotations.h),
// so that members declared ABSL_GUARDED_BY(mu_) and functions declared
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) are checked by clang's -Wthread-safety (the clang build,
// scripts/fuzz.sh, turns its findings into errors; docs/architecture.md "Lock rules").
//
// Not absl::Mutex: Debian's abseil is not built with ThreadSanitizer, so TSan would report
// absl::Mutex itself as racy. Everything here is inline with no virtual call; a Mutex is a
// std::mutex and costs the same.
//
// Thread safety: Mutex and SharedMutex are the synchronisation; CondVar is safe to notify from
// any thread and waited on only with its mutex held.
#ifndef ECD_LIB_UTIL_MUTEX_H_
#define ECD_LIB_UTIL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/base/thread_annotations.h"

namespace ecd {

class CondVar;

// An exclusive, non-recursive mutex (a std::mutex).
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Blocks until this thread holds the mutex. REQUIRES: not held by this thread.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  // Releases the mutex. REQUIRES: held by this thread.
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Takes the mutex if it is free; returns whether it did. REQUIRES: not held by this thread.
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }
  // Tells the analysis the mutex is held here (where it cannot see it); checks nothing at run
  // time, std::mutex has no owner to ask.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to the end of its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds `mu` from construction, with Unlock and Lock to let it go and take it again inside the
// scope (as std::unique_lock); the destructor releases it if held. REQUIRES of Unlock: held;
// of Lock: not held. Prefer MutexLock where the scope never lets go.
class ABSL_SCOPED_LOCKABLE UniqueMutexLock {
 public:
  explicit UniqueMutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.Lock(); }
  ~UniqueMutexLock() ABSL_UNLOCK_FUNCTION() {
    if (held_) mu_.Unlock();
  }
  UniqueMutexLock(const UniqueMutexLock&) = delete;
  UniqueMutexLock& operator=(const UniqueMutexLock&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.Lock();
    held_ = true;
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    held_ = false;
    mu_.Unlock();
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A condition variable waited on with a Mutex held (a std::condition_variable over the Mutex's
// std::mutex). Each Wait releases the mutex while blocked and holds it again when it returns,
// so to the analysis the mutex stays held across the call.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Blocks until notified (or woken spuriously). REQUIRES: `mu` held.
  void Wait(Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Blocks until `done()` is true; `done` runs with `mu` held (annotate a lambda reading guarded
  // members ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu)). REQUIRES: `mu` held. Not analysed inside: the
  // analysis cannot match the lambda's `mu` to this parameter; callers are still checked.
  template <typename Pred>
  void Wait(Mutex& mu, Pred done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    while (!done()) Wait(mu);
  }
  // Blocks until notified or `deadline`; returns false when it returned for the deadline.
  // REQUIRES: `mu` held.
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  // Blocks until `done()` is true or `deadline` has passed; returns `done()`. REQUIRES: `mu`.
  // Not analysed inside, as Wait(mu, done).
  template <typename Clock, typename Duration, typename Pred>
  bool WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline, Pred done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    while (!done()) {
      if (!WaitUntil(mu, deadline)) return done();
    }
    return true;
  }
  // Blocks until notified or `timeout` has passed; returns false when it returned for the
  // timeout. REQUIRES: `mu` held.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }
  // As WaitUntil, `timeout` from now.
  template <typename Rep, typename Period, typename Pred>
  bool WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout, Pred done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout, std::move(done));
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A reader-writer mutex (a std::shared_mutex): one writer or many readers.
class ABSL_LOCKABLE SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  // Exclusive (writer) side. REQUIRES: not held by this thread.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Shared (reader) side. REQUIRES: not held by this thread.
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `mu` exclusively for its scope.
class ABSL_SCOPED_LOCKABLE WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.Lock();
  }
  ~WriterMutexLock() ABSL_UNLOCK_FUNCTION() { mu_.Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds `mu` shared for its scope.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.ReaderLock();
  }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_.ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace ecd

#endif  // ECD_LIB_UTIL_MUTEX_H_
