// Per-object reader/writer locks that prefer writers and give up when a request's Interrupt
// fires. Internal to lib/store.
#ifndef ECD_LIB_STORE_OBJECT_LOCKS_H_
#define ECD_LIB_STORE_OBJECT_LOCKS_H_

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "lib/store/interrupt.h"
#include "lib/store/object_name.h"
#include "lib/util/mutex.h"

namespace ecd::store {

// Per-object reader/writer locks, created on demand and dropped when unused. Writers are
// preferred: a writer waiting for its exclusive lock holds the object's turnstile, which new
// readers pass through first, so a steady stream of reads cannot starve an update. A wait gives
// up when the request's Interrupt fires: a writer that gives up lets the turnstile go.
//
// Thread safety: thread-safe; a Guard is not, and is destroyed on the thread that made it.
// REQUIRES: a thread holds at most one Guard of an object at a time (a second one, even shared,
// may deadlock on the turnstile). Ownership: every Guard must be destroyed before the ObjectLocks.
class ObjectLocks {
 public:
  // One object's lock. Internal: used through Guard only.
  struct Lock {
    std::timed_mutex turnstile;
    std::shared_timed_mutex rw;
  };
  // Holds the lock of one object, shared or exclusive, for its lifetime once status() is OK;
  // DeadlineExceeded or Cancelled (nothing held) when `interrupt` fired while it waited. With an
  // Interrupt that can never fire (Interrupt::never) it waits as long as it takes.
  class Guard {
   public:
    Guard(ObjectLocks& table, absl::string_view name, bool exclusive,
          const Interrupt& interrupt = {})
        : table_(table), name_(name), exclusive_(exclusive), lock_(table.Get(name_)) {
      if (interrupt.never()) {
        if (exclusive_) {
          std::lock_guard turn(lock_->turnstile);
          lock_->rw.lock();
        } else {
          { std::lock_guard turn(lock_->turnstile); }
          lock_->rw.lock_shared();
        }
        return;
      }
      status_ = Take(interrupt);
    }
    ~Guard() {
      if (status_.ok()) {
        if (exclusive_) {
          lock_->rw.unlock();
        } else {
          lock_->rw.unlock_shared();
        }
      }
      table_.Put(name_, lock_);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    const absl::Status& status() const { return status_; }

   private:
    // Takes the lock as the constructor does, in slices that end when `interrupt` is to be
    // checked again.
    absl::Status Take(const Interrupt& interrupt) {
      std::string what;  // Made once there is a wait.
      const auto within = [&](auto try_until) -> absl::Status {
        for (absl::Duration slice = absl::ZeroDuration();;) {
          if (try_until(std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(slice))) {
            return absl::OkStatus();
          }
          if (what.empty()) {
            what = absl::StrCat("waiting for the lock of \"", EscapeName(name_),
                                "\" (an update, delete or recover of it was in progress); "
                                "nothing was done");
          }
          if (absl::Status s = interrupt.Check(what); !s.ok()) return s;
          slice = std::clamp(interrupt.NextCheck() - absl::Now(), absl::ZeroDuration(),
                             absl::Seconds(1));
        }
      };
      Lock& l = *lock_;
      if (absl::Status s = within([&](auto t) { return l.turnstile.try_lock_until(t); }); !s.ok()) {
        return s;
      }
      if (!exclusive_) {
        l.turnstile.unlock();
        return within([&](auto t) { return l.rw.try_lock_shared_until(t); });
      }
      absl::Status s = within([&](auto t) { return l.rw.try_lock_until(t); });
      l.turnstile.unlock();
      return s;
    }

    ObjectLocks& table_;
    const std::string name_;
    const bool exclusive_;
    std::shared_ptr<Lock> lock_;
    absl::Status status_;
  };

 private:
  std::shared_ptr<Lock> Get(const std::string& name) {
    MutexLock lock(mu_);
    auto& m = locks_[name];
    if (!m) m = std::make_shared<Lock>();
    return m;
  }
  void Put(const std::string& name, std::shared_ptr<Lock>& m) {
    MutexLock lock(mu_);
    m.reset();
    auto it = locks_.find(name);
    if (it != locks_.end() && it->second.use_count() == 1) locks_.erase(it);
  }

  Mutex mu_;
  std::map<std::string, std::shared_ptr<Lock>> locks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_OBJECT_LOCKS_H_
