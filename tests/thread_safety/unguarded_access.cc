// Must NOT compile under clang -Wthread-safety -Werror=thread-safety: reads an ABSL_GUARDED_BY
// member without its mutex (tests/thread_safety/CMakeLists.txt).
#include "lib/util/mutex.h"

namespace ecd {

class Account {
 public:
  void Deposit(int amount) {
    MutexLock lock(mu_);
    balance_ += amount;
  }
  int Balance() const { return balance_; }  // The error: mu_ is not held.

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
