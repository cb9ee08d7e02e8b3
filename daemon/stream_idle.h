// StreamIdleTimer: cancels the calls whose client has stopped: an Encode or Update that sends
// nothing, or a Read or GetBlock whose responses it does not take, for --stream-idle-timeout.
// Such a call holds what it reserved (stripe memory, an object's lock, a call slot) for as
// long as it lasts; cancelled, it gives them back. Only the time a handler spends waiting for
// its client counts (inside a stream's Read or Write); time ecd spends working does not.
//
//   StreamIdleTimer::Waiting wait(timer, context, "encode", StreamIdleTimer::kSending);
//   const bool got = reader->Read(&message);   // the wait for the client
//   if (wait.Done()) return wait.status();     // the timer cancelled the call meanwhile
//
// Thread safety: all methods may be called concurrently.
#ifndef ECD_DAEMON_STREAM_IDLE_H_
#define ECD_DAEMON_STREAM_IDLE_H_

#include <grpcpp/server_context.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

class StreamIdleTimer {
 public:
  // Cancels a call once it has waited for its client `timeout` without a break. Starts a
  // thread; an infinite or zero `timeout` starts none and never cancels.
  explicit StreamIdleTimer(absl::Duration timeout);
  ~StreamIdleTimer();  // Stops the thread. REQUIRES: no Waiting is alive.
  StreamIdleTimer(const StreamIdleTimer&) = delete;
  StreamIdleTimer& operator=(const StreamIdleTimer&) = delete;

  // What the call waits for: its client to send a message, or to take one.
  enum Direction { kSending, kTaking };

  // Marks the call of `context` as waiting for its client from now until Done or destruction.
  // `what` names the call in the status and the log ("encode", "read"); it must outlive this.
  // `timer` may be null: nothing is timed.
  class Waiting {
   public:
    Waiting(StreamIdleTimer* timer, grpc::ServerContext* context, const char* what,
            Direction direction);
    ~Waiting() { Done(); }
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;
    // Ends the wait; true when the timer cancelled the call meanwhile (then the stream's Read or
    // Write failed because of it). Later calls return the same.
    bool Done();
    // What the timer told the client (DEADLINE_EXCEEDED naming --stream-idle-timeout), as the
    // status of the store's operation: DeadlineExceeded. REQUIRES: Done() returned true.
    absl::Status status() const;

   private:
    StreamIdleTimer* const timer_;
    const char* const what_;
    const Direction direction_;
    uint64_t id_ = 0;
    bool done_ = false;
    bool cancelled_ = false;
  };

  absl::Duration timeout() const { return timeout_; }
  // Calls cancelled so far.
  uint64_t cancelled_calls() const { return cancelled_calls_.load(std::memory_order_relaxed); }

  // The message a call cancelled so is ended with ("ecd cancelled the encode: ...").
  std::string Message(const char* what, Direction direction) const;

 private:
  struct Entry {
    grpc::ServerContext* context;
    const char* what;
    Direction direction;
    std::chrono::steady_clock::time_point since;
    bool cancelled = false;
  };
  uint64_t Add(grpc::ServerContext* context, const char* what, Direction direction);
  bool Remove(uint64_t id);  // Returns whether the entry was cancelled.
  void Run();

  const absl::Duration timeout_;
  std::atomic<uint64_t> cancelled_calls_{0};
  Mutex mu_;
  CondVar changed_;
  std::map<uint64_t, Entry> waiting_ ABSL_GUARDED_BY(mu_);  // by id, the oldest first
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_STREAM_IDLE_H_
