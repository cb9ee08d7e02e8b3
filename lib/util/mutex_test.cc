// Mutex, MutexLock, CondVar and SharedMutex (lib/util/mutex.h): exclusion, waking on a
// predicate, deadlines, readers sharing and writers excluding them.
#include "lib/util/mutex.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ecd {
namespace {

using namespace std::chrono_literals;

struct Counter {
  Mutex mu;
  long value ABSL_GUARDED_BY(mu) = 0;
};

struct Flag {
  Mutex mu;
  CondVar cv;
  int value ABSL_GUARDED_BY(mu) = 0;
};

TEST(MutexTest, MutexLockExcludesOtherThreads) {
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        MutexLock lock(c.mu);
        long v = c.value;  // A separate read and write: lost updates if the lock did not exclude.
        c.value = v + 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  MutexLock lock(c.mu);
  EXPECT_EQ(c.value, 4 * 20000);
}

TEST(MutexTest, TryLockFailsWhileHeldAndSucceedsAfter) {
  Mutex mu;
  mu.Lock();
  bool got = true;
  std::thread([&] {
    got = false;
    if (mu.TryLock()) {
      got = true;
      mu.Unlock();
    }
  }).join();
  EXPECT_FALSE(got);
  mu.Unlock();
  std::thread([&] {
    got = false;
    if (mu.TryLock()) {
      got = true;
      mu.Unlock();
    }
  }).join();
  EXPECT_TRUE(got);
}

TEST(MutexTest, WaitWithPredicateWakesWhenItHolds) {
  Flag f;
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    MutexLock lock(f.mu);
    f.cv.Wait(f.mu, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(f.mu) { return f.value != 0; });
    woke = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(woke);  // Not before the predicate holds.
  {
    MutexLock lock(f.mu);
    f.value = 1;
  }
  f.cv.NotifyAll();
  waiter.join();
  EXPECT_TRUE(woke);
}

TEST(MutexTest, WaitReleasesTheMutexWhileBlocked) {
  Flag f;
  std::thread waiter([&] {
    MutexLock lock(f.mu);
    f.value = 1;
    f.cv.NotifyAll();
    f.cv.Wait(f.mu, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(f.mu) { return f.value == 2; });
    f.value = 3;
  });
  {
    MutexLock lock(f.mu);  // Only possible while the waiter is blocked in Wait.
    f.cv.Wait(f.mu, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(f.mu) { return f.value == 1; });
    f.value = 2;
  }
  f.cv.NotifyAll();
  waiter.join();
  MutexLock lock(f.mu);
  EXPECT_EQ(f.value, 3);
}

TEST(MutexTest, WaitForTimesOutWhenThePredicateNeverHolds) {
  Flag f;
  MutexLock lock(f.mu);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(f.cv.WaitFor(f.mu, 30ms, [] { return false; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_TRUE(f.cv.WaitFor(f.mu, 30ms, [] { return true; }));
}

TEST(MutexTest, WaitUntilReturnsTrueWhenWokenInTime) {
  Flag f;
  std::thread setter([&] {
    std::this_thread::sleep_for(10ms);
    MutexLock lock(f.mu);
    f.value = 1;
    f.cv.NotifyOne();
  });
  {
    MutexLock lock(f.mu);
    EXPECT_TRUE(f.cv.WaitUntil(f.mu, std::chrono::steady_clock::now() + 10s,
                               [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(f.mu) { return f.value != 0; }));
  }
  setter.join();
}

TEST(MutexTest, UniqueMutexLockLetsGoAndTakesAgain) {
  Counter c;
  std::atomic<bool> other_done{false};
  {
    UniqueMutexLock lock(c.mu);
    c.value = 1;
    lock.Unlock();
    std::thread([&] {
      MutexLock l(c.mu);  // Would deadlock if Unlock had not released the mutex.
      c.value = 2;
      other_done = true;
    }).join();
    lock.Lock();
    EXPECT_EQ(c.value, 2);
    lock.Unlock();  // Left unheld: the destructor must not release it again.
  }
  EXPECT_TRUE(other_done);
  if (c.mu.TryLock()) {  // Free after the scope.
    c.mu.Unlock();
  } else {
    ADD_FAILURE() << "the mutex is still held after the UniqueMutexLock's scope";
  }
}

TEST(MutexTest, ReadersShareAndAWriterExcludesThem) {
  SharedMutex mu;
  std::atomic<int> readers{0};
  std::atomic<int> max_readers{0};
  {
    ReaderMutexLock first(mu);
    std::thread second([&] {
      ReaderMutexLock lock(mu);  // Would block forever if readers excluded each other.
      readers = 1;
    });
    second.join();
    EXPECT_EQ(readers, 1);
  }
  std::atomic<bool> writer_in{false};
  std::thread writer;
  {
    ReaderMutexLock lock(mu);
    writer = std::thread([&] {
      WriterMutexLock w(mu);
      writer_in = true;
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(writer_in);  // Held off while a reader holds the mutex.
    max_readers = 1;
  }
  writer.join();
  EXPECT_TRUE(writer_in);
  EXPECT_EQ(max_readers, 1);
}

}  // namespace
}  // namespace ecd
