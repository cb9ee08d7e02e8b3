// Must compile under clang -Wthread-safety -Werror=thread-safety: the same class as
// unguarded_access.cc with the read under a MutexLock (tests/thread_safety/CMakeLists.txt).
#include "lib/util/mutex.h"

namespace ecd {

class Account {
 public:
  void Deposit(int amount) {
    MutexLock lock(mu_);
    balance_ += amount;
  }
  int Balance() const {
    MutexLock lock(mu_);
    return balance_;
  }

 private:
  mutable Mutex mu_;
  int balance_ ABSL_GUARDED_BY(mu_) = 0;
};

int Use() {
  Account a;
  a.Deposit(1);
  return a.Balance();
}

}  // namespace ecd
