// MemoryBudget: the bytes of stripe buffers that the requests of one store may hold at once.
// A request reserves what it needs before it allocates; when the budget is spent it waits, in
// arrival order, until earlier requests give memory back, so that ecd's resident size stays
// under its configured limit whatever the object sizes or the number of clients. Waiting is
// itself bounded: past max_waiters queued requests, or after max_wait, a request is refused
// with ResourceExhausted rather than queued without end, and a request whose caller gives up
// (its Interrupt) leaves the queue at once.
#ifndef ECD_LIB_STORE_MEMORY_BUDGET_H_
#define ECD_LIB_STORE_MEMORY_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "lib/store/interrupt.h"
#include "lib/util/mutex.h"

namespace ecd::store {

struct MemoryBudgetOptions {
  uint64_t limit_bytes = 0;                     // 0: no limit (reservations never wait).
  size_t max_waiters = 64;                      // Requests queued at once before refusing.
  absl::Duration max_wait = absl::Seconds(60);  // How long one request may wait.
};

// Thread safety: all methods are thread-safe (a Reservation is not; see there).
class MemoryBudget {
 public:
  explicit MemoryBudget(MemoryBudgetOptions options) : options_(options) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Holds reserved bytes until destroyed (or Release). Movable; must not outlive the budget.
  // Not thread-safe: one Reservation is used by one thread at a time.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) {
      other.budget_ = nullptr;
    }
    Reservation& operator=(Reservation&& other) noexcept;
    ~Reservation() { Release(); }
    uint64_t bytes() const { return budget_ == nullptr ? 0 : bytes_; }
    void Release();
    // Takes over `other`'s bytes: this reservation then holds both until it is released.
    // REQUIRES: both come from the same budget, or one of them holds nothing.
    void Merge(Reservation&& other);

   private:
    friend class MemoryBudget;
    Reservation(MemoryBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    MemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  // Reserves `bytes`, waiting (first come, first served) while the budget is spent.
  // ResourceExhausted at once when `bytes` exceeds the whole limit or max_waiters requests are
  // already waiting, and after max_wait of waiting; the message names the limit and what to do.
  // DeadlineExceeded or Cancelled when `interrupt` fires while it waits (not a refusal: the
  // caller gave up); later requests then no longer wait behind it.
  absl::StatusOr<Reservation> Reserve(uint64_t bytes, const Interrupt& interrupt = {});

  // Reserves `bytes` only if that needs no wait: nobody is waiting and the budget has them
  // free. For a request that already holds memory and could use more (waiting for more while
  // holding some could deadlock two such requests). Neither a wait nor a refusal is counted.
  std::optional<Reservation> TryReserve(uint64_t bytes);

  // ResourceExhausted (counted as a refusal) when `bytes` exceed the whole limit, so that no
  // reservation of them could ever succeed; OK otherwise. Reserve checks this first.
  absl::Status CheckFits(uint64_t bytes);

  // How many of `unit`-byte buffers, between 1 and `wanted`, a request should ask for so that
  // its reservation (with `extra` bytes besides) fits the limit at all (a wide stripe gets a
  // shallower pipeline).
  size_t Fit(uint64_t unit, size_t wanted, uint64_t extra = 0) const;

  uint64_t limit_bytes() const { return options_.limit_bytes; }
  uint64_t reserved_bytes() const;
  size_t waiting() const;
  // Reservations that had to wait, and those refused, since the budget was made.
  uint64_t waits() const;
  uint64_t refusals() const;

 private:
  void Give(uint64_t bytes);
  absl::Status CheckFitsLocked(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Passes the turn over tickets that gave up waiting. REQUIRES: mu_ held.
  void AdvanceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MemoryBudgetOptions options_;
  mutable Mutex mu_;
  CondVar changed_;
  uint64_t reserved_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;    // The ticket of the next waiter
  uint64_t serving_ ABSL_GUARDED_BY(mu_) = 0;        // The ticket allowed to reserve next
  std::set<uint64_t> skipped_ ABSL_GUARDED_BY(mu_);  // Tickets that timed out, not yet passed
  size_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t waits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refusals_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_MEMORY_BUDGET_H_
