// Tests of MemoryBudget: accounting, waiting in arrival order, the bounds on waiting, waits
// that end with the caller's deadline or cancellation, and reservations that never wait.
#include "lib/store/memory_budget.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace ecd::store {
namespace {

using std::chrono::milliseconds;

MemoryBudgetOptions Limit(uint64_t bytes) {
  MemoryBudgetOptions o;
  o.limit_bytes = bytes;
  return o;
}

TEST(MemoryBudget, ReservesAndGivesBack) {
  MemoryBudget budget(Limit(100));
  absl::StatusOr<MemoryBudget::Reservation> a = budget.Reserve(60);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->bytes(), 60u);
  EXPECT_EQ(budget.reserved_bytes(), 60u);
  {
    absl::StatusOr<MemoryBudget::Reservation> b = budget.Reserve(40);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(budget.reserved_bytes(), 100u);
    MemoryBudget::Reservation moved = std::move(*b);
    EXPECT_EQ(moved.bytes(), 40u);
    EXPECT_EQ(b->bytes(), 0u);
    EXPECT_EQ(budget.reserved_bytes(), 100u);
  }
  EXPECT_EQ(budget.reserved_bytes(), 60u);
  a->Release();
  EXPECT_EQ(budget.reserved_bytes(), 0u);
  EXPECT_EQ(budget.waits(), 0u);
}

TEST(MemoryBudget, MoreThanTheLimitIsRefusedAtOnce) {
  MemoryBudget budget(Limit(100));
  absl::StatusOr<MemoryBudget::Reservation> r = budget.Reserve(101);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("--memory-limit"), std::string::npos) << r.status();
  EXPECT_EQ(budget.refusals(), 1u);
  EXPECT_EQ(budget.reserved_bytes(), 0u);
}

TEST(MemoryBudget, NoLimitNeverWaits) {
  MemoryBudget budget(Limit(0));
  absl::StatusOr<MemoryBudget::Reservation> a = budget.Reserve(uint64_t{1} << 40);
  absl::StatusOr<MemoryBudget::Reservation> b = budget.Reserve(uint64_t{1} << 40);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(budget.reserved_bytes(), uint64_t{2} << 40);
}

TEST(MemoryBudget, WaitsUntilMemoryIsGivenBack) {
  MemoryBudget budget(Limit(100));
  absl::StatusOr<MemoryBudget::Reservation> holder = budget.Reserve(100);
  ASSERT_TRUE(holder.ok());
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    absl::StatusOr<MemoryBudget::Reservation> r = budget.Reserve(50);
    EXPECT_TRUE(r.ok()) << r.status();
    got = true;
  });
  while (budget.waiting() == 0) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(got.load());
  holder->Release();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(budget.waits(), 1u);
  EXPECT_EQ(budget.reserved_bytes(), 0u);
}

TEST(MemoryBudget, ServesWaitersInArrivalOrder) {
  MemoryBudget budget(Limit(100));
  absl::StatusOr<MemoryBudget::Reservation> holder = budget.Reserve(60);
  ASSERT_TRUE(holder.ok());
  std::atomic<bool> big_done{false}, small_done{false};
  MemoryBudget::Reservation big_r;
  std::thread big([&] {  // Needs 80: must wait for the holder.
    absl::StatusOr<MemoryBudget::Reservation> r = budget.Reserve(80);
    ASSERT_TRUE(r.ok()) << r.status();
    big_r = std::move(*r);
    big_done = true;
  });
  while (budget.waiting() < 1) std::this_thread::sleep_for(milliseconds(1));
  std::thread small([&] {  // 30 would fit beside the holder now, but it came after the big one.
    absl::StatusOr<MemoryBudget::Reservation> r = budget.Reserve(30);
    ASSERT_TRUE(r.ok()) << r.status();
    small_done = true;
  });
  while (budget.waiting() < 2) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(big_done.load());
  EXPECT_FALSE(small_done.load());
  holder->Release();  // The big one goes first; 80 + 30 does not fit, so the small one waits.
  big.join();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(small_done.load());
  EXPECT_EQ(budget.reserved_bytes(), 80u);
  big_r.Release();
  small.join();
  EXPECT_TRUE(small_done.load());
  EXPECT_EQ(budget.reserved_bytes(), 0u);
  EXPECT_EQ(budget.waits(), 2u);
}

TEST(MemoryBudget, TooManyWaitersAreRefused) {
  MemoryBudgetOptions o = Limit(100);
  o.max_waiters = 1;
  MemoryBudget budget(o);
  absl::StatusOr<MemoryBudget::Reservation> holder = budget.Reserve(100);
  ASSERT_TRUE(holder.ok());
  std::thread waiter([&] { EXPECT_TRUE(budget.Reserve(100).ok()); });
  while (budget.waiting() < 1) std::this_thread::sleep_for(milliseconds(1));
  absl::StatusOr<MemoryBudget::Reservation> refused = budget.Reserve(1);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("already waiting"), std::string::npos)
      << refused.status();
  holder->Release();
  waiter.join();
  EXPECT_EQ(budget.refusals(), 1u);
}

TEST(MemoryBudget, WaitingEndsAfterMaxWaitAndPassesTheTurnOn) {
  MemoryBudgetOptions o = Limit(100);
  o.max_wait = absl::Milliseconds(300);
  MemoryBudget budget(o);
  absl::StatusOr<MemoryBudget::Reservation> holder = budget.Reserve(100);
  ASSERT_TRUE(holder.ok());
  absl::Status first_status;
  std::thread first([&] { first_status = budget.Reserve(100).status(); });
  while (budget.waiting() < 1) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(150));
  absl::Status second_status = absl::UnknownError("not run");
  std::thread second([&] { second_status = budget.Reserve(50).status(); });
  first.join();  // Gives up after 300 ms.
  EXPECT_EQ(first_status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(first_status.message().find("waited"), std::string::npos) << first_status;
  holder->Release();  // The second waiter, behind the one that gave up, must now get its turn.
  second.join();
  EXPECT_TRUE(second_status.ok()) << second_status;
  EXPECT_EQ(budget.reserved_bytes(), 0u);
}

TEST(MemoryBudget, AWaitEndsAtTheCallersDeadlineAndPassesTheTurnOn) {
  MemoryBudget budget(Limit(100));
  absl::StatusOr<MemoryBudget::Reservation> holder = budget.Reserve(100);
  ASSERT_TRUE(holder.ok());
  absl::Status first_status;
  absl::Duration waited;
  std::thread first([&] {
    const absl::Time start = absl::Now();
    first_status =
        budget.Reserve(100, Interrupt{.deadline = start + absl::Milliseconds(200)}).status();
    waited = absl::Now() - start;
  });
  while (budget.waiting() < 1) std::this_thread::sleep_for(milliseconds(1));
  absl::Status second_status = absl::UnknownError("not run");
  std::thread second([&] { second_status = budget.Reserve(50).status(); });
  while (budget.waiting() < 2) std::this_thread::sleep_for(milliseconds(1));
  first.join();
  EXPECT_EQ(first_status.code(), absl::StatusCode::kDeadlineExceeded) << first_status;
  EXPECT_NE(first_status.message().find("stripe memory"), std::string::npos) << first_status;
  EXPECT_GE(waited, absl::Milliseconds(200));
  EXPECT_LT(waited, absl::Seconds(2));
  EXPECT_EQ(budget.refusals(), 0u);  // The caller gave up: not a refusal.
  holder->Release();                 // The waiter behind it gets its turn.
  second.join();
  EXPECT_TRUE(second_status.ok()) << second_status;
  EXPECT_EQ(budget.reserved_bytes(), 0u);
  EXPECT_EQ(budget.waiting(), 0u);
}

TEST(MemoryBudget, AWaitEndsWhenTheCallerGoesAway) {
  MemoryBudget budget(Limit(100));
  absl::StatusOr<MemoryBudget::Reservation> holder = budget.Reserve(100);
  ASSERT_TRUE(holder.ok());
  std::atomic<bool> gone{false};
  absl::Status status;
  std::thread waiter([&] {
    status = budget.Reserve(10, Interrupt{.cancelled = [&] { return gone.load(); }}).status();
  });
  while (budget.waiting() < 1) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(budget.waiting(), 1u);  // Still waiting: nobody went away yet.
  gone = true;
  waiter.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_EQ(budget.waiting(), 0u);
  EXPECT_EQ(budget.reserved_bytes(), 100u);
  // A deadline already passed does not stop a reservation that needs no wait.
  holder->Release();
  EXPECT_TRUE(budget.Reserve(10, Interrupt{.deadline = absl::InfinitePast()}).ok());
}

TEST(MemoryBudget, TryReserveTakesOnlyWhatIsFreeWithNobodyWaiting) {
  MemoryBudget budget(Limit(100));
  std::optional<MemoryBudget::Reservation> a = budget.TryReserve(60);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(budget.TryReserve(50).has_value());  // Does not fit: no wait either.
  std::optional<MemoryBudget::Reservation> b = budget.TryReserve(40);
  ASSERT_TRUE(b.has_value());
  a->Merge(*std::move(b));  // One reservation of both.
  EXPECT_EQ(a->bytes(), 100u);
  EXPECT_EQ(b->bytes(), 0u);
  EXPECT_EQ(budget.reserved_bytes(), 100u);
  a->Release();
  EXPECT_EQ(budget.reserved_bytes(), 0u);
  // With a request waiting, nothing is taken past it, even what would fit.
  absl::StatusOr<MemoryBudget::Reservation> holder = budget.Reserve(90);
  std::thread waiter([&] { EXPECT_TRUE(budget.Reserve(20).ok()); });
  while (budget.waiting() < 1) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_FALSE(budget.TryReserve(5).has_value());
  holder->Release();
  waiter.join();
  EXPECT_EQ(budget.waits(), 1u);
  EXPECT_EQ(budget.refusals(), 0u);
}

TEST(MemoryBudget, FitShrinksThePipelineToTheLimit) {
  MemoryBudget budget(Limit(100));
  EXPECT_EQ(budget.Fit(30, 5), 3u);
  EXPECT_EQ(budget.Fit(10, 5), 5u);
  EXPECT_EQ(budget.Fit(200, 5), 1u);
  // With bytes besides the buffers (a read's message buffers) in the same reservation.
  EXPECT_EQ(budget.Fit(30, 5, 20), 2u);
  EXPECT_EQ(budget.Fit(30, 5, 10), 3u);
  EXPECT_EQ(budget.Fit(30, 5, 150), 1u);
  MemoryBudget unlimited(Limit(0));
  EXPECT_EQ(unlimited.Fit(1u << 30, 4), 4u);
  EXPECT_EQ(unlimited.Fit(1u << 30, 4, 1u << 30), 4u);
}

}  // namespace
}  // namespace ecd::store
