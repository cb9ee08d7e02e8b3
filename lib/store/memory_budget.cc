// MemoryBudget: a byte semaphore with a first-come-first-served queue and bounded waiting.
#include "lib/store/memory_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/util/mutex.h"

namespace ecd::store {

MemoryBudget::Reservation& MemoryBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
  }
  return *this;
}

void MemoryBudget::Reservation::Merge(Reservation&& other) {
  if (other.budget_ == nullptr) return;
  if (budget_ == nullptr) {
    *this = std::move(other);
    return;
  }
  bytes_ += other.bytes_;
  other.budget_ = nullptr;
}

void MemoryBudget::Reservation::Release() {
  if (budget_ != nullptr) budget_->Give(bytes_);
  budget_ = nullptr;
}

std::optional<MemoryBudget::Reservation> MemoryBudget::TryReserve(uint64_t bytes) {
  MutexLock lock(mu_);
  const uint64_t limit = options_.limit_bytes;
  if (limit != 0 && (waiting_ > 0 || reserved_ + bytes > limit)) return std::nullopt;
  reserved_ += bytes;
  return Reservation(this, bytes);
}

absl::StatusOr<MemoryBudget::Reservation> MemoryBudget::Reserve(uint64_t bytes,
                                                                const Interrupt& interrupt) {
  MutexLock lock(mu_);
  const uint64_t limit = options_.limit_bytes;
  if (limit == 0) {
    reserved_ += bytes;
    return Reservation(this, bytes);
  }
  if (absl::Status s = CheckFitsLocked(bytes); !s.ok()) return s;
  // Nobody queued and room now: no wait. Otherwise join the queue behind earlier waiters, so
  // that a large request is not starved by a stream of small ones.
  if (waiting_ == 0 && reserved_ + bytes <= limit) {
    reserved_ += bytes;
    return Reservation(this, bytes);
  }
  if (waiting_ >= options_.max_waiters) {
    ++refusals_;
    return absl::ResourceExhaustedError(absl::StrCat(
        waiting_, " requests are already waiting for stripe memory (limit ", limit,
        " bytes, all reserved); retry later, or raise --memory-limit or --max-memory-waiters"));
  }
  const uint64_t ticket = next_ticket_++;
  ++waiting_;
  ++waits_;
  const absl::Time started = absl::Now();
  const auto granted = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return serving_ == ticket && reserved_ + bytes <= limit;
  };
  const absl::Status interrupted =
      WaitFor(changed_, mu_, interrupt, started + options_.max_wait,
              absl::StrCat("waiting for ", bytes, " bytes of stripe memory (limit ", limit,
                           " bytes, all reserved by other requests)"),
              granted);
  --waiting_;
  if (interrupted.ok() && granted()) {
    reserved_ += bytes;
    ++serving_;
    AdvanceLocked();
    changed_.NotifyAll();
    return Reservation(this, bytes);
  }
  // Timed out or interrupted. Later tickets must not wait for this one: if it is at the head,
  // pass the turn on; otherwise mark it to be skipped when the turn reaches it.
  skipped_.insert(ticket);
  AdvanceLocked();
  changed_.NotifyAll();
  if (!interrupted.ok()) return interrupted;
  ++refusals_;
  return absl::ResourceExhaustedError(
      absl::StrCat("waited ", absl::FormatDuration(options_.max_wait), " for ", bytes,
                   " bytes of stripe memory (limit ", limit,
                   " bytes, all reserved by other requests); retry later or raise --memory-limit"));
}

absl::Status MemoryBudget::CheckFits(uint64_t bytes) {
  MutexLock lock(mu_);
  return CheckFitsLocked(bytes);
}

absl::Status MemoryBudget::CheckFitsLocked(uint64_t bytes) {
  const uint64_t limit = options_.limit_bytes;
  if (limit == 0 || bytes <= limit) return absl::OkStatus();
  ++refusals_;
  return absl::ResourceExhaustedError(absl::StrCat(
      "the request needs ", bytes, " bytes of stripe buffers but the memory limit leaves ", limit,
      " for all requests; use a smaller block size or raise --memory-limit"));
}

size_t MemoryBudget::Fit(uint64_t unit, size_t wanted, uint64_t extra) const {
  if (options_.limit_bytes == 0 || unit == 0) return std::max<size_t>(wanted, 1);
  const uint64_t fits = (options_.limit_bytes - std::min(extra, options_.limit_bytes)) / unit;
  return static_cast<size_t>(std::clamp<uint64_t>(fits, 1, std::max<size_t>(wanted, 1)));
}

void MemoryBudget::AdvanceLocked() {
  while (skipped_.erase(serving_) > 0) ++serving_;
}

void MemoryBudget::Give(uint64_t bytes) {
  MutexLock lock(mu_);
  reserved_ -= bytes;
  changed_.NotifyAll();
}

uint64_t MemoryBudget::reserved_bytes() const {
  MutexLock lock(mu_);
  return reserved_;
}

size_t MemoryBudget::waiting() const {
  MutexLock lock(mu_);
  return waiting_;
}

uint64_t MemoryBudget::waits() const {
  MutexLock lock(mu_);
  return waits_;
}

uint64_t MemoryBudget::refusals() const {
  MutexLock lock(mu_);
  return refusals_;
}

}  // namespace ecd::store
