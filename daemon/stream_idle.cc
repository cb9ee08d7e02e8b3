// StreamIdleTimer: one thread that cancels calls stuck waiting for their client too long.
#include "daemon/stream_idle.h"

#include <grpc/grpc.h>

#include "absl/strings/str_cat.h"
#include "daemon/request_limiter.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

StreamIdleTimer::StreamIdleTimer(absl::Duration timeout) : timeout_(timeout) {
  if (timeout_ > absl::ZeroDuration() && timeout_ != absl::InfiniteDuration()) {
    thread_ = std::thread([this] { Run(); });
  }
}

StreamIdleTimer::~StreamIdleTimer() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  changed_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

std::string StreamIdleTimer::Message(const char* what, Direction direction) const {
  return absl::StrCat("ecd cancelled the ", what, ": the client ",
                      direction == kSending ? "sent nothing" : "took no data", " for ",
                      absl::FormatDuration(timeout_), " (--stream-idle-timeout)");
}

StreamIdleTimer::Waiting::Waiting(StreamIdleTimer* timer, grpc::ServerContext* context,
                                  const char* what, Direction direction)
    : timer_(timer != nullptr && timer->thread_.joinable() ? timer : nullptr),
      what_(what),
      direction_(direction) {
  if (timer_ != nullptr) id_ = timer_->Add(context, what, direction);
}

bool StreamIdleTimer::Waiting::Done() {
  if (!done_) {
    done_ = true;
    if (timer_ != nullptr) cancelled_ = timer_->Remove(id_);
  }
  return cancelled_;
}

absl::Status StreamIdleTimer::Waiting::status() const {
  return absl::DeadlineExceededError(timer_->Message(what_, direction_));
}

uint64_t StreamIdleTimer::Add(grpc::ServerContext* context, const char* what, Direction direction) {
  MutexLock lock(mu_);
  const uint64_t id = next_id_++;
  const bool was_empty = waiting_.empty();
  waiting_.emplace(id, Entry{context, what, direction, std::chrono::steady_clock::now()});
  // A later entry expires after the earlier ones: the thread, if it sleeps until the first of
  // those, need not wake. It sleeps without end only when there were none.
  if (was_empty) changed_.NotifyAll();
  return id;
}

bool StreamIdleTimer::Remove(uint64_t id) {
  MutexLock lock(mu_);
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return false;
  const bool cancelled = it->second.cancelled;
  waiting_.erase(it);
  return cancelled;
}

void StreamIdleTimer::Run() {
  const auto timeout = absl::ToChronoNanoseconds(timeout_);
  MutexLock lock(mu_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    auto next = std::chrono::steady_clock::time_point::max();
    for (auto& [id, e] : waiting_) {
      if (e.cancelled) continue;
      if (now - e.since < timeout) {
        next = std::min(next, e.since + timeout);
        continue;
      }
      // The entry is removed before its handler goes on, so the call is alive; cancelling it
      // is thread-safe, and its client gets this status and message (not a bare CANCELLED).
      e.cancelled = true;
      cancelled_calls_.fetch_add(1, std::memory_order_relaxed);
      const std::string message = Message(e.what, e.direction);
      Log(LogLevel::kWarning, "%s (peer %s)", message, ResolvePeer(e.context->peer()));
      grpc_call_cancel_with_status(e.context->c_call(), GRPC_STATUS_DEADLINE_EXCEEDED,
                                   message.c_str(), nullptr);
    }
    if (next == std::chrono::steady_clock::time_point::max()) {
      changed_.Wait(mu_);
    } else {
      changed_.WaitUntil(mu_, next);
    }
  }
}

}  // namespace ecd::daemon
